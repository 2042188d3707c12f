import { describe, expect, it } from "vitest";
import { CheckpointStoreCorrupt, type StoredCall } from "../src/store.js";
import { type CallEntry, CallLog, DurableRun, readCallLog, Sealer } from "../src/runner.js";
import { RunWriter } from "../src/log/run-writer.js";
import { OLD_KEY, TamperedStore, editSealed, sealer, startRun } from "./helpers.js";

/** Each claim here is another worker's, of a run whose starter (alive in this process) holds a live lease. */
const TAKE_OVER = { takeOver: true } as const;
const entry = (callId: string, kind: CallEntry["kind"] = "started"): CallEntry => ({
  round: 1,
  callId,
  tool: "charge_card",
  kind,
  args: { amount: 10, card: callId },
  ...(kind === "done" ? { result: { charged: true } } : {}),
});

/** A run with three call records: started a, done a, started b. */
async function runWithCalls() {
  const store = new TamperedStore();
  const { run } = await startRun(store);
  await Promise.all([run.log.append(entry("a")), run.log.append(entry("a", "done")), run.log.append(entry("b"))]);
  return { store, run };
}

describe("call log", () => {
  it("numbers records from 0 in each segment and reads them back in order", async () => {
    const { store } = await runWithCalls();
    const records = await readCallLog(store, sealer, "run-1", [3]);
    expect(records.map((r) => [r.segment, r.seq, r.callId, r.kind])).toEqual([
      [0, 0, "a", "started"],
      [0, 1, "a", "done"],
      [0, 2, "b", "started"],
    ]);
  });

  it("keeps numbering without gaps across a claim into a new segment", async () => {
    const { store } = await runWithCalls();
    const { run, records } = await DurableRun.claim(
      store,
      sealer,
      await DurableRun.latest(store, sealer, "run-1"),
      TAKE_OVER,
    );
    expect(records).toHaveLength(3);
    await run.log.append(entry("c"));
    const after = await readCallLog(store, sealer, "run-1", [3, 1]);
    expect(after.map((r) => [r.segment, r.seq])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
      [1, 0],
    ]);
  });

  const tamper: Array<[string, (rows: StoredCall[]) => StoredCall[], RegExp]> = [
    ["a deleted middle record (a gap)", (rows) => [rows[0]!, rows[2]!], /record 2 where record 1 belongs/],
    [
      "two records swapped",
      (rows) => [rows[0]!, { ...rows[1]!, sealed: rows[2]!.sealed }, { ...rows[2]!, sealed: rows[1]!.sealed }],
      /stored number differs/,
    ],
    ["rows returned out of order", (rows) => [rows[1]!, rows[0]!, rows[2]!], /out of order/],
    [
      "a changed argument",
      (rows) =>
        rows.map((r, i) => (i === 0 ? { ...r, sealed: editSealed(r.sealed, '"amount":10', '"amount":99') } : r)),
      /signature/,
    ],
    [
      "a changed result",
      (rows) =>
        rows.map((r, i) => (i === 1 ? { ...r, sealed: editSealed(r.sealed, '"charged":true', '"charged":false') } : r)),
      /signature/,
    ],
    [
      "a record forged with another key",
      (rows) => [...rows.slice(0, 2), { ...rows[2]!, sealed: Sealer.withKeys(OLD_KEY).seal("call", { forged: 1 }) }],
      /signature/,
    ],
  ];
  it.each(tamper)("finds %s", async (_, edit, message) => {
    const { store } = await runWithCalls();
    store.editCalls = edit;
    const read = readCallLog(store, sealer, "run-1", []);
    await expect(read).rejects.toThrow(CheckpointStoreCorrupt);
    await expect(read).rejects.toThrow(message);
  });

  const failed: CallEntry = { ...entry("a"), kind: "error", error: "Error: down" };
  const denied: CallEntry = { ...entry("a"), kind: "denied" };
  it.each([
    ["an error record after a done", entry("a", "done"), failed],
    ["a done record after an error", failed, entry("a", "done")],
    ["a second done record", entry("a", "done"), entry("a", "done")],
    ["a started record after a done", entry("a", "done"), entry("a")],
    ["a started record after a denial", denied, entry("a")],
  ])(
    "finds %s of one call, though sealed with the key: a finished call is never made again",
    async (_, outcome, after) => {
      const store = new TamperedStore();
      const { run } = await startRun(store);
      for (const record of [entry("a"), outcome, after]) await run.log.append(record);
      await run.flush();
      const read = readCallLog(store, sealer, "run-1", []);
      await expect(read).rejects.toThrow(CheckpointStoreCorrupt);
      await expect(read).rejects.toThrow(/record after its outcome/);
    },
  );

  it("finds a record of another run in the log", async () => {
    const { store } = await runWithCalls();
    const { run: other } = await startRun(store, "run-2");
    await other.log.append(entry("x"));
    const foreign = (await store.calls("run-2"))[0]!;
    store.editCalls = (rows) => (rows[0]?.runId === "run-1" ? [...rows, { ...foreign, runId: "run-1", seq: 3 }] : rows);
    await expect(readCallLog(store, sealer, "run-1", [])).rejects.toThrow(/another run/);
  });

  it("finds deleted trailing records that a checkpoint counted", async () => {
    const { store, run } = await runWithCalls();
    await run.save("running", { state: {} });
    store.editCalls = (rows) => rows.slice(0, 2);
    const latest = await DurableRun.latest(store, sealer, "run-1");
    expect(latest.calls).toEqual([3]);
    await expect(readCallLog(store, sealer, "run-1", latest.calls)).rejects.toThrow(
      /counts 3 call records in segment 0 but only 2/,
    );
  });

  it("finds counted records deleted from one segment when another segment holds records no checkpoint counted", async () => {
    // Segment 0 counted 3 records. A claim opens segment 1, its worker writes 2
    // records and dies before its next checkpoint: they are counted nowhere.
    const { store } = await runWithCalls();
    const { run: first } = await DurableRun.claim(
      store,
      sealer,
      await DurableRun.latest(store, sealer, "run-1"),
      TAKE_OVER,
    );
    await first.save("running", { state: {} });
    const { run: second } = await DurableRun.claim(
      store,
      sealer,
      await DurableRun.latest(store, sealer, "run-1"),
      TAKE_OVER,
    );
    await Promise.all([second.log.append(entry("c")), second.log.append(entry("c", "done"))]);
    // Deleting two counted records of segment 0 leaves the total as sealed.
    store.editCalls = (rows) => rows.filter((r) => !(r.segment === 0 && r.seq >= 1));
    const latest = await DurableRun.latest(store, sealer, "run-1");
    expect(latest.calls).toEqual([3, 0, 0]);
    await expect(readCallLog(store, sealer, "run-1", latest.calls)).rejects.toThrow(
      /counts 3 call records in segment 0 but only 1/,
    );
  });

  it("counts exactly what a claim read once it saves again, so later deletions of those records are found", async () => {
    const { store } = await runWithCalls(); // 3 records in segment 0, never counted by a checkpoint
    const { run } = await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, "run-1"), TAKE_OVER);
    await run.log.append(entry("c"));
    await run.save("running", { state: {} });
    const latest = await DurableRun.latest(store, sealer, "run-1");
    expect(latest.calls).toEqual([3, 1]);
    store.editCalls = (rows) => rows.filter((r) => r.segment !== 0 || r.seq < 2);
    await expect(readCallLog(store, sealer, "run-1", latest.calls)).rejects.toThrow(/segment 0 but only 2/);
  });

  it("fails every append after a write the store refused: the numbering is no longer known", async () => {
    const { store } = await startRun();
    const log = new CallLog(new RunWriter(store, "run-1"), sealer, "run-1", 5, []);
    await expect(log.append(entry("a"))).rejects.toThrow(/segment 5/);
    await expect(log.append(entry("b"))).rejects.toThrow(/segment 5/);
  });

  it("refuses to append a record that cannot be sealed, and queues nothing", async () => {
    const { store, run } = await startRun();
    expect(() => run.log.append({ ...entry("a", "done"), result: { when: new Date() } as never })).toThrow(/a Date/);
    await run.log.append(entry("a"));
    expect((await store.calls("run-1")).map((r) => r.seq)).toEqual([0]);
  });
});
