import type { JsonValue } from "@durable/core";

/** One change between two JSON values: where (a JSON path), and the value before and after (absent when added or removed). */
export interface Change {
  readonly path: string;
  readonly before?: JsonValue;
  readonly after?: JsonValue;
}

/** The most changes a diff lists: a state rewritten whole is shown as its first changes, then a count. */
const MAX_CHANGES = 200;

/**
 * The changes from `before` to `after`, leaf by leaf: objects key by key,
 * arrays index by index (a value of another type, or an array that changed
 * length past its end, is a change of its own). Paths read like
 * `$.state.seats` and `$.messages[3]`.
 */
export function diffJson(before: JsonValue | undefined, after: JsonValue | undefined): Change[] {
  const changes: Change[] = [];
  walk("$", before, after, changes);
  return changes;
}

function walk(path: string, before: JsonValue | undefined, after: JsonValue | undefined, out: Change[]): void {
  if (out.length >= MAX_CHANGES) return;
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    for (const key of keys) walk(`${path}${propertyPath(key)}`, before[key], after[key], out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    for (let i = 0; i < Math.max(before.length, after.length); i++) walk(`${path}[${i}]`, before[i], after[i], out);
    return;
  }
  if (before === undefined && after === undefined) return;
  if (JSON.stringify(before) === JSON.stringify(after)) return;
  out.push({ path, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) });
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `.name` for a plain identifier, else `["…"]`. */
function propertyPath(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
