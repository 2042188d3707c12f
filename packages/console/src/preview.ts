import type { JsonValue } from "@durable/core";

/** The start of a value's pretty JSON, and the size of the whole. */
export interface Preview {
  /** Pretty-printed JSON (two spaces), at most `limit` characters: cut where the limit fell. */
  readonly text: string;
  readonly cut: boolean;
  /** The size of the value's compact JSON in characters, escapes not counted. */
  readonly size: number;
}

/**
 * Prints a value as `JSON.stringify(value, null, 2)` would, up to `limit`
 * characters, and measures the whole without printing it: a page shows the
 * start of a 20 MiB result without serializing 20 MiB (its size is read off
 * string lengths).
 */
export function preview(value: JsonValue, limit: number): Preview {
  const out: string[] = [];
  let left = limit;
  let cut = false;
  const emit = (text: string): void => {
    if (text.length > left) {
      cut = true;
      if (left > 0) out.push(text.slice(0, left));
      left = 0;
      return;
    }
    out.push(text);
    left -= text.length;
  };
  const walk = (v: JsonValue, indent: string): void => {
    if (left <= 0) {
      cut = true;
      return;
    }
    // A long string is cut before it is escaped: only what is shown is.
    if (typeof v === "string") {
      emit(v.length <= left ? JSON.stringify(v) : `${JSON.stringify(v.slice(0, left))}…`);
      return;
    }
    if (v === null || typeof v !== "object") {
      emit(JSON.stringify(v));
      return;
    }
    const entries: ReadonlyArray<readonly [string | undefined, JsonValue]> = Array.isArray(v)
      ? v.map((item) => [undefined, item] as const)
      : Object.entries(v);
    const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
    if (entries.length === 0) {
      emit(`${open}${close}`);
      return;
    }
    emit(`${open}\n`);
    const inner = `${indent}  `;
    entries.forEach(([key, item], i) => {
      emit(key === undefined ? inner : `${inner}${JSON.stringify(key)}: `);
      walk(item, inner);
      emit(i < entries.length - 1 ? ",\n" : "\n");
    });
    emit(`${indent}${close}`);
  };
  walk(value, "");
  return { text: out.join(""), cut, size: sizeOf(value) };
}

function sizeOf(value: JsonValue): number {
  if (typeof value === "string") return value.length + 2;
  if (value === null || typeof value !== "object") return String(value).length;
  // Brackets, then each item (a key with its quotes and colon), then the commas between.
  const items = Array.isArray(value)
    ? value.map(sizeOf)
    : Object.entries(value).map(([key, item]) => key.length + 3 + sizeOf(item));
  return items.reduce((sum, size) => sum + size, 2) + Math.max(items.length - 1, 0);
}
