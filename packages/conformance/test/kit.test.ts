import { describe, expect, it } from "vitest";
import { GROUPS, Harness, groupNamed, initializerProblems, runConformance, type ConformanceInitializer, type GroupName } from "../src/index.js";
import { dropsLastRecord, ignoresPrefix, memory, noCompareAndSet, noFencing, reordersRecords } from "./broken-stores.js";

// The reference store passes every group.
runConformance(memory);

/** The names of the cases of a group that fail against a store. */
async function failingCases(init: ConformanceInitializer, group: GroupName): Promise<string[]> {
  const failed: string[] = [];
  for (const testCase of groupNamed(group).cases) {
    if (testCase.skipUnless?.(init) !== undefined) continue;
    const h = await Harness.open(init);
    try {
      await testCase.run(h);
    } catch {
      failed.push(testCase.name);
    } finally {
      await h.dispose();
    }
  }
  return failed;
}

describe("the kit catches broken stores", () => {
  const cases: Array<[ConformanceInitializer, GroupName, string]> = [
    [noCompareAndSet, "save", "refuses step 0 again, a skipped step and a step already taken"],
    [noCompareAndSet, "save", "lets exactly one of 8 clients saving the same step at once win"],
    [noFencing, "call-log", "refuses a record from an older segment after a claim"],
    [noFencing, "call-log", "refuses a record from an older segment when the claim and the record race"],
    [dropsLastRecord, "call-log", "keeps every record, numbered and in order, across segments"],
    [reordersRecords, "call-log", "keeps every record, numbered and in order, across segments"],
    [ignoresPrefix, "isolation", "a second store sees nothing of the first, and changes nothing of it"],
  ];
  const named = cases.map(([init, group, caughtBy]) => [init.name, group, caughtBy, init] as const);
  it.each(named)("a store that %s fails %s: %s", async (_, group, caughtBy, init) => {
    expect(await failingCases(init, group)).toContain(caughtBy);
  }, 60_000);

  it("every broken store passes the groups that do not guard its fault, so each failure is the right one", async () => {
    expect(await failingCases(noFencing, "save")).toEqual([]);
    expect(await failingCases(dropsLastRecord, "save")).toEqual([]);
    expect(await failingCases(ignoresPrefix, "call-log")).toEqual([]);
  }, 60_000);

  it("names every group once", () => {
    expect(GROUPS.map((g) => g.name)).toEqual(["save", "read", "call-log", "integrity", "tamper", "isolation", "ttl", "scale", "race", "crash"]);
  });
});

describe("the initializer's shape", () => {
  it("multiProcess needs an opener module and a handle function", () => {
    const base = { name: "s", createStore: () => memory.createStore() };
    expect(initializerProblems({ ...base, capabilities: { multiProcess: true } })).toEqual([
      "`capabilities.multiProcess` must be { opener: <URL of a module whose default export opens a store from a handle>, handle: (store) => string }.",
    ]);
    expect(initializerProblems({ ...base, capabilities: { multiProcess: { opener: "file:///x.mjs", handle: () => "h" } } })).toEqual([]);
  });
});
