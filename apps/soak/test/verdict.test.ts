import { describe, expect, it } from "vitest";
import { vacuousSoak } from "../src/verdict.js";

const proof = { kills: 12, restarts: 4, killsInsideTools: 3, recovered: 20, inDoubtRuns: 3, replayedCalls: 5 };

describe("a soak only passes when its kills and restarts exercised failover", () => {
  it("passes a soak with kills inside tools, restarts, runs taken over, runs in doubt and replayed calls", () => {
    expect(vacuousSoak(proof)).toBeUndefined();
  });

  it.for([
    [{ ...proof, kills: 0 }, /no worker was killed/],
    [{ ...proof, restarts: 0 }, /no rolling restart/],
    [{ ...proof, killsInsideTools: 0 }, /none landed inside a tool/],
    [{ ...proof, recovered: 0 }, /no worker took a run over/],
    [{ ...proof, inDoubtRuns: 0 }, /no run was found in doubt/],
    [{ ...proof, replayedCalls: 0 }, /no call replayed/],
  ] as const)("fails %o with one line that says why", ([figures, reason]) => {
    const verdict = vacuousSoak(figures);
    expect(verdict).toMatch(reason);
    expect(verdict).not.toContain("\n");
  });
});
