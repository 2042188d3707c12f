import fc from "fast-check";
import type { JsonValue } from "@durable/core";
import { describe, expect, it } from "vitest";
import { json, SHOWN_CHARS } from "../src/html.js";
import { preview } from "../src/preview.js";

const values = fc.jsonValue() as fc.Arbitrary<JsonValue>;

describe("a value's preview", () => {
  it("is JSON.stringify(value, null, 2) whole when it fits, cut to the limit when it does not", () => {
    fc.assert(
      fc.property(values, fc.integer({ min: 0, max: 400 }), (value, limit) => {
        const whole = JSON.stringify(value, null, 2);
        const shown = preview(value, limit);
        expect(shown.text.length).toBeLessThanOrEqual(limit);
        expect(shown.cut).toBe(whole.length > limit);
        if (!shown.cut) expect(shown.text).toBe(whole);
        else expect(whole.startsWith(shown.text) || shown.text.endsWith("…")).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("measures the whole as its compact JSON (escapes aside) without printing it", () => {
    // A backslash in the compact JSON is an escape, which the measure does not count.
    const unescaped = values.filter((value) => !JSON.stringify(value).includes("\\"));
    fc.assert(
      fc.property(unescaped, (value) => {
        expect(preview(value, 0).size).toBe(JSON.stringify(value).length);
      }),
      { numRuns: 500 },
    );
  });

  it("shows the start of a 20 MiB result, says its size and links to the whole", () => {
    const big = { report: "x".repeat(20 * 2 ** 20) };
    const started = performance.now();
    const html = json(big, "/api/runs/r/steps/1");
    const tookMs = performance.now() - started;
    expect(html.length).toBeLessThan(SHOWN_CHARS + 400);
    expect(html).toContain("Cut at 4,000 characters of about 21.0 MB");
    expect(html).toContain('<a href="/api/runs/r/steps/1" download>the whole value</a>');
    // Printing it whole takes tens of ms; cutting first, well under one (loose: no timing verdict, a sanity bound).
    expect(tookMs).toBeLessThan(1_000);
  });
});
