import { FlowError } from "./flow-error.js";
import type { Reducers } from "./flow.js";

/**
 * Merges the updates of one superstep into the state, in frontier order. A
 * field with a reducer combines every write (`reducer(current, update)`);
 * any other field may be written by one node only: two writers is `FlowError`.
 * Fields set to `undefined` are not writes.
 */
export function mergeUpdates<S>(
  state: S,
  updates: ReadonlyArray<readonly [node: string, update: Partial<S>]>,
  reducers: Reducers<S>,
): S {
  const next = { ...state } as Record<string, unknown>;
  const writers = new Map<string, string>();
  for (const [node, update] of updates) {
    if (typeof update !== "object" || update === null || Array.isArray(update)) {
      throw new FlowError(
        `node ${JSON.stringify(node)} returned ${JSON.stringify(update)}; a node returns an object of the fields it changes.`,
      );
    }
    for (const [field, value] of Object.entries(update)) {
      if (value === undefined) continue;
      // Own reducers only: a field named `constructor` or `toString` has none from Object.prototype.
      const reducer = own(reducers as Record<string, unknown>, field) as
        | ((a: unknown, b: unknown) => unknown)
        | undefined;
      const first = writers.get(field);
      // The stored value is sealed (frozen): a reducer that adds to its `current` in place gets a copy of it.
      const current = first === undefined ? structuredClone(next[field]) : next[field];
      if (reducer !== undefined) put(next, field, reducer(current, value));
      else if (first !== undefined) {
        throw new FlowError(
          `nodes ${JSON.stringify(first)} and ${JSON.stringify(node)} both wrote ${JSON.stringify(field)} in one superstep; ` +
            "give the field a reducer in the flow's options to combine the writes.",
        );
      } else put(next, field, value);
      writers.set(field, node);
    }
  }
  return next as S;
}

/** A record's own value for a key: field and node names such as `toString` inherit nothing from Object.prototype. */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Sets a key as a plain property: a `__proto__` key (JSON from a tool may hold one) stays a key, not the prototype. */
export function put(target: Record<string, unknown>, field: string, value: unknown): void {
  Object.defineProperty(target, field, { value, enumerable: true, writable: true, configurable: true });
}
