import { describe, expect, it } from "vitest";
import { fromNow } from "../src/html.js";

describe("fromNow", () => {
  it("names a span in the largest unit it holds twice: seconds, minutes, hours, days, years", () => {
    const at = (seconds: number) => fromNow(seconds * 1000, 0);
    expect([5, 119, 120, 7_199, 7_200, 172_799, 172_800].map(at)).toEqual([
      "in 5 s",
      "in 119 s",
      "in 2 min",
      "in 120 min",
      "in 2 h",
      "in 48 h",
      "in 2 days",
    ]);
    expect(fromNow(0, 90_000)).toBe("90 s ago");
    // The lease of a wait with no timeout runs 3e14 ms: thousands of years, not 83,333,333 h.
    expect(fromNow(3e14, 0)).toBe("in 9,506 years");
  });
});
