import { describe, expect, it } from "vitest";
import { vacuousSoak } from "../src/verdict.js";

describe("a soak only passes when its kills exercised recovery", () => {
  it("passes a soak with kills, runs in doubt and replayed calls", () => {
    expect(vacuousSoak({ kills: 12, inDoubtRuns: 3, replayedCalls: 5 })).toBeUndefined();
  });

  it.for([
    [{ kills: 0, inDoubtRuns: 0, replayedCalls: 0 }, /no worker was killed/],
    [{ kills: 12, inDoubtRuns: 0, replayedCalls: 5 }, /no run was in doubt/],
    [{ kills: 12, inDoubtRuns: 3, replayedCalls: 0 }, /no call replayed/],
  ] as const)("fails %o with one line that says why", ([figures, reason]) => {
    const verdict = vacuousSoak(figures);
    expect(verdict).toMatch(reason);
    expect(verdict).not.toContain("\n");
  });
});
