import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidInput } from "../src/index.js";
import { canonicalJson } from "../src/runner.js";

/** Rebuilds an object with its keys in another order, deeply. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, seed));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!).reverse();
  return Object.fromEntries(rotated.map(([k, v]) => [k, shuffleKeys(v, seed + 1)]));
}

describe("canonical JSON", () => {
  it("gives equal bytes for equal values whatever the key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(50), (value, seed) => {
        expect(canonicalJson(shuffleKeys(value, seed))).toBe(canonicalJson(value));
      }),
      { numRuns: 500 },
    );
  });

  it("round-trips: parsing the bytes gives the value back, and encoding that gives the same bytes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        const back: unknown = JSON.parse(text);
        expect(back).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(back)).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it("sorts keys, drops undefined properties and writes -0 as 0", () => {
    expect(canonicalJson({ b: 1, a: [true, null, "x"], c: undefined, d: -0 })).toBe(
      '{"a":[true,null,"x"],"b":1,"d":0}',
    );
  });

  it("accepts a value shared twice that is no cycle", () => {
    const shared = { n: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"n":1},"b":[{"n":1}]}');
  });

  class Point {
    x = 1;
  }
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic["self"] = cyclic;
  const cases: Array<[string, unknown, RegExp]> = [
    ["a function", { f: () => 1 }, /state\.f: a function/],
    ["a BigInt", { n: 10n }, /state\.n: a bigint/],
    ["a symbol", [Symbol("s")], /state\[0\]: a symbol/],
    ["a cycle", cyclic, /state\.self: .*cycle/],
    ["a class instance", { p: new Point() }, /state\.p: a Point instance/],
    ["a Date", { when: new Date(0) }, /state\.when: a Date instance/],
    ["a Map", new Map(), /state: a Map instance/],
    ["undefined in an array", { list: [1, undefined] }, /state\.list\[1\]: undefined in an array/],
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this case is about.
    ["an array hole", { list: [1, , 3] }, /state\.list\[1\]: an array hole/],
    ["NaN", { x: Number.NaN }, /state\.x: NaN/],
    ["Infinity", { x: Number.POSITIVE_INFINITY }, /state\.x: Infinity/],
    ["undefined itself", undefined, /state: undefined is not plain JSON/],
  ];
  it.each(cases)("refuses %s with InvalidInput naming the path", (_, value, message) => {
    expect(() => canonicalJson(value, "state")).toThrow(InvalidInput);
    expect(() => canonicalJson(value, "state")).toThrow(message);
  });
});
