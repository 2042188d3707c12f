/**
 * Freezes a value and everything in it, stopping at parts already frozen (so
 * freezing a value that grew costs only what is new). Code that changes it in
 * place then throws a `TypeError` instead of changing what was saved.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
