import { CheckpointStoreCorrupt, type StoredCheckpoint } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { RowColumn, RowRef } from "../harness/initializer.js";
import type { ConformanceCase } from "./case.js";
import { breaks } from "./rule.js";

/*
 * Rows of a shape no save writes (a column of another type or out of its
 * range), set past the store's API: every operation that reads one is
 * CheckpointStoreCorrupt naming the run. Not a TypeError, not an unknown run
 * (CheckpointNotFound: the run would look as if it never existed), not
 * StoreUnavailable (a worker would retry it forever): each of those hides
 * the run from the people who must look at it.
 */

type Value = string | number | null;

/** Values no save writes into each column. */
const NOT_WHOLE: readonly Value[] = [-1, 1.5, "x", null];
const CHECKPOINT: ReadonlyArray<[RowColumn, readonly Value[]]> = [
  ["status", ["stalled", 7, null]],
  ["segment", NOT_WHOLE],
  ["name", ["", 7, null]],
  ["kind", ["task", null]],
  ["sealed", [7, null]],
];
const CALL: ReadonlyArray<[RowColumn, readonly Value[]]> = [
  ["segment", NOT_WHOLE],
  ["seq", NOT_WHOLE],
  ["sealed", [7, null]],
];
const HEAD: ReadonlyArray<[RowColumn, readonly Value[]]> = [
  ["step", NOT_WHOLE],
  ["status", ["stalled", null]],
  ["segment", NOT_WHOLE],
  ["name", ["", null]],
  ["kind", ["task", null]],
  ["records", NOT_WHOLE],
];

const OWNER = "conformance-owner";

/** A running run with steps 0–1, holding a lease, and two call records counted by step 1. */
async function runWithRows(h: Harness): Promise<string> {
  const runId = h.runId("malformed");
  await h.store.save(runId, 0, h.row(runId, 0), { owner: OWNER, ms: 60_000 });
  await h.recordCalls(runId, 0, 0, 2);
  await h.store.save(runId, 1, h.row(runId, 1, { calls: [2] }), { owner: OWNER, ms: 60_000 });
  return runId;
}

/** What an operation did: "corrupt" when it threw CheckpointStoreCorrupt naming the run, otherwise what came back. */
async function outcome(runId: string, operation: () => Promise<unknown>): Promise<string> {
  try {
    const value = await operation();
    return `resolved with ${JSON.stringify(value)?.slice(0, 120)}`;
  } catch (error) {
    if (error instanceof CheckpointStoreCorrupt && error.runId === runId) return "corrupt";
    return error instanceof Error ? `threw ${error.name}: ${error.message}` : `threw ${String(error)}`;
  }
}

/**
 * For each column and value: a new run, the column set, then each operation
 * judged. `judge` gives why an outcome is wrong, or undefined. The values the
 * store cannot hold are passed over; every other is judged.
 */
async function sweep(
  h: Harness,
  columns: ReadonlyArray<[RowColumn, readonly Value[]]>,
  row: (runId: string) => RowRef,
  operations: (runId: string) => Record<string, () => Promise<unknown>>,
  judge: (operation: string, result: string, column: RowColumn) => boolean = (_, result) => result === "corrupt",
): Promise<void> {
  const missed: string[] = [];
  let judged = 0;
  for (const [column, values] of columns) {
    for (const value of values) {
      const runId = await runWithRows(h);
      if (!(await h.raw.setColumn(row(runId), column, value))) continue;
      judged += 1;
      for (const [name, operation] of Object.entries(operations(runId))) {
        const result = await outcome(runId, operation);
        if (!judge(name, result, column))
          missed.push(`${row(runId).kind} ${column} = ${JSON.stringify(value)}: ${name} ${result}`);
      }
    }
  }
  const rule = breaks(
    "what-each-read-verifies",
    `each operation over a ${row("").kind} row with a column of another shape (${judged} values the store holds)`,
    "CheckpointStoreCorrupt naming the run",
  );
  expect(missed, `${rule}; ${missed.length} missed, first ${missed.slice(0, 3).join("; ")}`).toEqual([]);
}

/** `latest` of a run whose stored steps are 0–1: the row of step 1, or an error saying which it gave. */
async function storedLatest(h: Harness, runId: string): Promise<string> {
  const row: StoredCheckpoint = await h.store.latest(runId);
  if (row.step !== 1) throw new Error(`latest gave step ${row.step}, not the stored latest step 1`);
  return "the row of step 1";
}

export const malformedRowCases: readonly ConformanceCase[] = [
  {
    name: "a checkpoint row with a column of another shape (a status no run has, a segment that is not a whole number, no envelope): latest and history are CheckpointStoreCorrupt naming the run",
    timeout: 120_000,
    run: (h) =>
      sweep(
        h,
        CHECKPOINT,
        (runId) => ({ kind: "checkpoint", runId, step: 1 }),
        (runId) => ({
          "latest(runId)": () => h.store.latest(runId),
          ...(h.store.history === undefined ? {} : { "history(runId)": () => h.store.history!(runId) }),
        }),
      ),
  },
  {
    name: "a call record with a column of another shape: calls is CheckpointStoreCorrupt naming the run",
    timeout: 120_000,
    run: (h) =>
      sweep(
        h,
        CALL,
        (runId) => ({ kind: "call", runId, segment: 0, seq: 1 }),
        (runId) => ({ "calls(runId)": () => h.store.calls(runId) }),
      ),
  },
  {
    name: "the store's head of a run with a column of another shape: a save, a renewal, and a record over a column its rule reads are CheckpointStoreCorrupt naming the run, and latest and leaseOf too unless they read other columns alone",
    timeout: 120_000,
    run: (h) =>
      sweep(
        h,
        HEAD,
        (runId) => ({ kind: "head", runId }),
        (runId) => ({
          "latest(runId)": () => storedLatest(h, runId),
          "save(runId, 2)": () => h.store.save(runId, 2, h.row(runId, 2, { calls: [2] }), { owner: OWNER, ms: 60_000 }),
          "recordCall(runId, 0, 2)": () => h.store.recordCall(runId, 0, 2, h.call(runId, 0, 2)),
          "renew(runId, 0)": () => h.store.renew(runId, 0, { owner: OWNER, ms: 60_000 }),
          "leaseOf(runId)": () => h.store.leaseOf(runId),
        }),
        // latest may read the checkpoint rows alone, leaseOf the lease columns alone, and a record the columns its
        // rule reads alone (status, segment, count): a head column an operation does not read is not its to judge.
        (operation, result, column) =>
          result === "corrupt" ||
          (result.startsWith("resolved") &&
            (["latest(runId)", "leaseOf(runId)"].includes(operation) ||
              (operation === "recordCall(runId, 0, 2)" && ["step", "name", "kind"].includes(column)))),
      ),
  },
  {
    name: "the store's head naming a step that is not stored: latest is CheckpointStoreCorrupt or the stored latest row, never CheckpointNotFound",
    async run(h) {
      const runId = await runWithRows(h);
      if (!(await h.raw.setColumn({ kind: "head", runId }, "step", 7))) return;
      const result = await outcome(runId, () => storedLatest(h, runId));
      expect(
        result === "corrupt" || result.startsWith("resolved"),
        breaks(
          "what-each-read-verifies",
          `latest(runId) after the head was set to step 7 past the stored steps 0–1 (${result})`,
          "CheckpointStoreCorrupt naming the run, or the row of step 1",
        ),
      ).toBe(true);
    },
  },
];
