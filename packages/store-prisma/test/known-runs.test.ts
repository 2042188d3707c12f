import { describe, expect, it } from "vitest";
import { KnownRuns, type KnownRun } from "../src/known-runs.js";

const run = (status: "running" | "done" = "running"): KnownRun => ({
  head: { step: 1, status, name: "f", kind: "flow", segment: 0, segmentCalls: 2, events: 0 },
  lease: undefined,
});

describe("the runs a Prisma store remembers", () => {
  it("keeps running runs, 10,000 at most, forgetting the oldest first", () => {
    const known = new KnownRuns();
    for (let i = 0; i <= 10_000; i++) known.set(`r${i}`, run());
    expect(known.get("r0")).toBeUndefined();
    expect(known.get("r1")).toEqual(run());
    expect(known.get("r10000")).toEqual(run());
  });

  it("keeps no ended run, and forgets a run written with nothing known", () => {
    const known = new KnownRuns();
    known.set("a", run());
    known.set("a", run("done"));
    known.set("b", run());
    known.set("b", undefined);
    expect([known.get("a"), known.get("b")]).toEqual([undefined, undefined]);
  });
});
