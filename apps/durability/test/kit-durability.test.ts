import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { failingCases } from "@durable/conformance";
import { checkOutsideTransaction, deferredCommit, sqlite, unavailableOnce, writeBehind } from "./broken-durability.js";

// The kit's own tests of its crash and race cases, with the SQLite store: the broken stores
// build on it, and the kit cannot depend on it (the store's own conformance run depends on the kit).
const CRASH_CASE = "a worker killed at every fault point in turn, in a flow (with a fan-out) and a tool loop";
const RACE_CASE = "refuses a record from an older segment when the claim and the record race";

// Only the kills inside a tool and right after a call's `failed` record resolved (12 trials, not the whole group), to
// keep CI short: a lost `started` shows as a tool run twice unreported, a lost `failed` as an attempt run again. (A
// `done` record waits for the run's next commit, so a kill right after it finds it not yet written.) The SQLite store's
// own conformance run proves it passes every point.
describe("the crash group judges from what the tools did, not from the store under test", () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env["DURABLE_CRASH_POINTS"];
    process.env["DURABLE_CRASH_POINTS"] = "tool.inside,call.after-failed";
  });
  afterEach(() => {
    if (saved === undefined) delete process.env["DURABLE_CRASH_POINTS"];
    else process.env["DURABLE_CRASH_POINTS"] = saved;
  });

  it("passes the SQLite store", async () => {
    expect([...(await failingCases(sqlite, "crash"))]).toEqual([]);
  }, 120_000);

  // A store unavailable for a moment in recovery is not broken: the try it failed may have run a call it could
  // not record, which the next try reports in doubt and reruns on a decision.
  it("passes a store that fails a commit of each recovery once with StoreUnavailable, after writing it", async () => {
    expect([...(await failingCases(unavailableOnce, "crash"))]).toEqual([]);
  }, 120_000);

  it.each([writeBehind, deferredCommit].map((init) => [init.name, init] as const))(
    "fails a store that %s",
    async (_, init) => {
      const failed = await failingCases(init, "crash");
      expect([...failed.keys()]).toEqual([CRASH_CASE]);
      expect(failed.get(CRASH_CASE)).toMatch(/[1-9]\d* of 12 crash trials failed/);
      expect(failed.get(CRASH_CASE)).toMatch(
        /the store had acknowledged its `started` record and no `done` was ever issued|non-idempotent tool ran 2 times .* without being reported/,
      );
      // The kills while a call waits between attempts: its acknowledged `failed` record was lost (every other run is encrypted).
      expect(failed.get(CRASH_CASE)).toMatch(
        /loop(?: \(encrypted\))? at call\.after-failed@1: charge \(\S+\): .*`failed` record/,
      );
    },
    120_000,
  );
});

describe("the call-log race case forces the fencing race", () => {
  it("fails a store that checks recordCall's segment outside its transaction, every run", async () => {
    for (let run = 0; run < 5; run++) {
      const failed = await failingCases(checkOutsideTransaction, "call-log");
      expect([...failed.keys()]).toEqual([RACE_CASE]);
      expect(failed.get(RACE_CASE)).toMatch(/the record landed after the claim/);
    }
  }, 60_000);
});
