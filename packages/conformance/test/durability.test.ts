import { describe, expect, it } from "vitest";
import { checkOutsideTransaction, deferredCommit, sqlite, writeBehind } from "./broken-durability.js";
import { failingCases } from "./failing-cases.js";

const CRASH_CASE = "a worker killed at every fault point in turn, in a flow (with a fan-out) and a tool loop";
const RACE_CASE = "refuses a record from an older segment when the claim and the record race";

describe("the crash group judges from what the tools did, not from the store under test", () => {
  it("passes the SQLite store", async () => {
    expect([...(await failingCases(sqlite, "crash"))]).toEqual([]);
  }, 300_000);

  it.each([writeBehind, deferredCommit].map((init) => [init.name, init] as const))("fails a store that %s", async (_, init) => {
    const failed = await failingCases(init, "crash");
    expect([...failed.keys()]).toEqual([CRASH_CASE]);
    expect(failed.get(CRASH_CASE)).toMatch(/acknowledged its `done` record before the crash|non-idempotent tool ran 2 times .* without being reported/);
  }, 300_000);
});

describe("the call-log race case forces the fencing race", () => {
  it("fails a store that checks recordCall's segment outside its transaction, every time", async () => {
    for (let run = 0; run < 5; run++) expect([...(await failingCases(checkOutsideTransaction, "call-log")).keys()]).toEqual([RACE_CASE]);
  }, 60_000);
});
