import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  InvalidInput,
  type LeaseClaim,
  LeaseHeld,
  MAX_BATCH_WRITES,
  type RunStatus,
  type RunWrite,
  StoreUnavailable,
} from "@durable/core/store";
import type { SQLiteCheckpointStore } from "../src/index.js";
import { storesOfThisFile } from "./conformance.js";

const open = storesOfThisFile();

const MINUTE = 60_000;
const row = (status: RunStatus, segment: number): CheckpointRow => ({
  status,
  segment,
  name: "f",
  kind: "flow",
  sealed: `d1.${status}.${segment}`,
});
const rec = (segment: number, seq: number): RunWrite => ({
  kind: "record",
  segment,
  seq,
  sealed: `c${segment}.${seq}`,
});
const save = (step: number, status: RunStatus, segment: number, lease?: LeaseClaim): RunWrite => ({
  kind: "save",
  step,
  row: row(status, segment),
  lease,
});
const byA = { owner: "a", ms: MINUTE };

/** A run at step 0, segment 0, leased to "a" for a minute, with record 0. */
async function started(store: SQLiteCheckpointStore): Promise<void> {
  await store.save("r", 0, row("running", 0), byA);
  await store.recordCall("r", 0, 0, "c0.0");
}

/** Every stored row of the run, read past the store's API. */
function rows(store: SQLiteCheckpointStore, runId = "r") {
  const db = new Database(store.path, { readonly: true });
  try {
    const t = store.tables;
    return {
      run: db.prepare(`SELECT * FROM ${t.runs} WHERE run_id = ?`).get(runId),
      checkpoints: db.prepare(`SELECT * FROM ${t.checkpoints} WHERE run_id = ? ORDER BY step`).all(runId),
      calls: db.prepare(`SELECT * FROM ${t.calls} WHERE run_id = ? ORDER BY segment, seq`).all(runId),
    };
  } finally {
    db.close();
  }
}

/** The write as a single operation. */
function single(store: SQLiteCheckpointStore, write: RunWrite): Promise<void> {
  return write.kind === "record"
    ? store.recordCall("r", write.segment, write.seq, write.sealed)
    : store.save("r", write.step, write.row, write.lease);
}

/** An error's class and message; a lease's "ms from now" differs from one read of the clock to the next. */
const described = (error: Error) => ({ name: error.name, message: error.message.replace(/\d+ ms from now/, "N ms") });

describe("a batch that is accepted", () => {
  it("lands whole: [done record, checkpoint, started record], and the run goes on from it", async () => {
    const store = open();
    await started(store);
    await store.commit("r", [rec(0, 1), save(1, "running", 0, byA), rec(0, 2)]);
    expect((await store.calls("r")).map((call) => call.sealed)).toEqual(["c0.0", "c0.1", "c0.2"]);
    expect(await store.latest("r")).toMatchObject({ step: 1, status: "running", segment: 0 });
    expect(rows(store).run).toMatchObject({ step: 1, segment: 0, segment_calls: 3, lease_owner: "a" });
    await store.recordCall("r", 0, 3, "c0.3");
    await expect(store.recordCall("r", 0, 3, "again")).rejects.toThrow(/call record 3 of segment 0 is not the next/);
  });

  it("numbers the records after a claim in the batch in the new segment, from 0, and fences the old one", async () => {
    const store = open();
    await started(store);
    await store.commit("r", [rec(0, 1), save(1, "running", 1, byA), rec(1, 0), rec(1, 1)]);
    expect((await store.calls("r")).map((call) => [call.segment, call.seq])).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ]);
    expect(rows(store).run).toMatchObject({ step: 1, segment: 1, segment_calls: 2 });
    await expect(store.recordCall("r", 0, 2, "late")).rejects.toThrow(/segment 0 is not the run's current one \(1\)/);
    await store.recordCall("r", 1, 2, "c1.2");
  });

  it("creates a run with its step 0 first, and takes a live lease over with takeOver", async () => {
    const store = open();
    await store.commit("r", [save(0, "running", 0, byA), rec(0, 0), rec(0, 1)]);
    expect(rows(store).run).toMatchObject({ step: 0, segment_calls: 2, lease_owner: "a" });
    await store.commit("r", [rec(0, 2), save(1, "running", 1, { owner: "b", ms: MINUTE, takeOver: true }), rec(1, 0)]);
    expect(await store.leaseOf("r")).toMatchObject({ owner: "b" });
    expect(rows(store).run).toMatchObject({ step: 1, segment: 1, segment_calls: 1 });
  });

  it("of records only, leaves the head and the lease as they were", async () => {
    const store = open();
    await started(store);
    const before = rows(store).run as Record<string, unknown>;
    await store.commit("r", [rec(0, 1), rec(0, 2)]);
    expect(rows(store).run).toEqual({ ...before, segment_calls: 3 });
  });

  it(`holds up to ${MAX_BATCH_WRITES} writes`, async () => {
    const store = open();
    const records = Array.from({ length: MAX_BATCH_WRITES - 1 }, (_, seq) => rec(0, seq));
    await store.commit("r", [save(0, "running", 0), ...records]);
    expect(rows(store).calls.length).toBe(MAX_BATCH_WRITES - 1);
  });
});

interface Refusal {
  readonly setup: (store: SQLiteCheckpointStore) => Promise<void>;
  /** The last write is the one refused; those before it are accepted one by one. */
  readonly batch: RunWrite[];
  readonly error: typeof CheckpointConflict | typeof CheckpointNotFound | typeof LeaseHeld;
  readonly message: RegExp;
}

const claimedByA = async (store: SQLiteCheckpointStore) => {
  await started(store);
  await store.save("r", 1, row("running", 1), byA);
};

const refusals: Record<string, Refusal> = {
  "a record that is not the next seq": {
    setup: started,
    batch: [rec(0, 1), save(1, "running", 0, byA), rec(0, 3)],
    error: CheckpointConflict,
    message: /call record 3 of segment 0 is not the next one \(2\)/,
  },
  "a record of a stale segment": {
    setup: claimedByA,
    batch: [rec(1, 0), rec(0, 1)],
    error: CheckpointConflict,
    message: /call-log segment 0 is not the run's current one \(1\)/,
  },
  "a checkpoint of a stale segment": {
    setup: claimedByA,
    batch: [rec(1, 0), save(2, "running", 0, byA)],
    error: CheckpointConflict,
    message: /segment 0 is older than the run's \(1\)/,
  },
  "a step another worker took": {
    setup: claimedByA,
    batch: [rec(1, 0), save(1, "running", 1, byA)],
    error: CheckpointConflict,
    message: /step 1 is not the next one \(2\)/,
  },
  "a record after the batch's checkpoint ended the run": {
    setup: started,
    batch: [rec(0, 1), save(1, "done", 0, byA), rec(0, 2)],
    error: CheckpointConflict,
    message: /the run ended \(done\); it takes no more calls/,
  },
  "a checkpoint of an ended run": {
    setup: async (store) => {
      await started(store);
      await store.save("r", 1, row("done", 0));
    },
    batch: [save(2, "running", 0, byA)],
    error: CheckpointConflict,
    message: /the run ended \(done\)/,
  },
  "a claim of a run another owner's live lease holds": {
    setup: started,
    batch: [rec(0, 1), save(1, "running", 1, { owner: "b", ms: MINUTE })],
    error: LeaseHeld,
    message: /held by worker "a"/,
  },
  "a record after a claim that is of the old segment": {
    setup: started,
    batch: [rec(0, 1), save(1, "running", 1, byA), rec(0, 2)],
    error: CheckpointConflict,
    message: /call-log segment 0 is not the run's current one \(1\)/,
  },
  "a record after a claim that does not start the new segment at 0": {
    setup: started,
    batch: [rec(0, 1), save(1, "running", 1, byA), rec(1, 1)],
    error: CheckpointConflict,
    message: /call record 1 of segment 1 is not the next one \(0\)/,
  },
  "a record of an unknown run": {
    setup: async () => {},
    batch: [rec(0, 0)],
    error: CheckpointNotFound,
    message: /"r"/,
  },
  "a bad record after the checkpoint that creates the run": {
    setup: async () => {},
    batch: [save(0, "running", 0, byA), rec(0, 0), rec(0, 2)],
    error: CheckpointConflict,
    message: /call record 2 of segment 0 is not the next one \(1\)/,
  },
};

describe("a batch with a refused write", () => {
  it.each(Object.entries(refusals))(
    "%s: writes nothing of it, and throws what the single operation throws",
    async (_, c) => {
      const store = open();
      await c.setup(store);
      const before = rows(store);
      const leaseBefore = await store.leaseOf("r");

      const refused = await store.commit("r", c.batch).catch((error: Error) => error);
      expect(refused).toBeInstanceOf(c.error);
      expect((refused as Error).message).toMatch(c.message);
      expect(rows(store)).toEqual(before);
      expect(await store.leaseOf("r")).toEqual(
        leaseBefore === undefined ? undefined : { ...leaseBefore, now: expect.any(Number) },
      );

      // The same writes one by one: those before the refused one are accepted, and it is refused alike.
      for (const write of c.batch.slice(0, -1)) await single(store, write);
      const alone = await single(store, c.batch.at(-1) as RunWrite).catch((error: Error) => error);
      expect(alone).toBeInstanceOf(c.error);
      expect(described(alone as Error)).toEqual(described(refused as Error));
    },
  );

  it("rolls back the writes already run when a later statement fails", async () => {
    const store = open();
    await started(store);
    // A record the head does not count, put there behind the store's back: the batch's insert of it fails.
    const db = new Database(store.path);
    db.prepare(`INSERT INTO ${store.tables.calls} VALUES ('r', 0, 2, 'planted')`).run();
    db.close();
    const before = rows(store);
    await expect(store.commit("r", [rec(0, 1), save(1, "running", 0, byA), rec(0, 2)])).rejects.toThrow(
      StoreUnavailable,
    );
    expect(rows(store)).toEqual(before);
  });
});

describe("a malformed batch", () => {
  const malformed: Record<string, unknown[]> = {
    "no writes": [],
    [`more than ${MAX_BATCH_WRITES} writes`]: Array.from({ length: MAX_BATCH_WRITES + 1 }, (_, seq) => rec(0, seq)),
    "two checkpoints": [save(0, "running", 0), rec(0, 0), save(1, "running", 0)],
    "a write of an unknown kind": [save(0, "running", 0), { kind: "delete" }],
    "a negative seq": [save(0, "running", 0), rec(0, -1)],
    "a step that is not whole": [rec(0, 0), { ...save(1, "running", 0), step: 1.5 }],
    "a segment that is not a number": [save(0, "running", 0), { ...rec(0, 0), segment: "0" }],
    "a record whose envelope is not a string": [save(0, "running", 0), { ...rec(0, 0), sealed: 5 }],
    "bad lease terms": [save(0, "running", 0, { owner: "", ms: 10 })],
  };

  it.each(Object.entries(malformed))("%s: InvalidInput, nothing written", async (_, writes) => {
    const store = open();
    await expect(store.commit("r", writes as RunWrite[])).rejects.toThrow(InvalidInput);
    expect(rows(store)).toEqual({ run: undefined, checkpoints: [], calls: [] });
  });

  it("the single operations are batches of one: the same checks", async () => {
    const store = open();
    await expect(store.save("r", -1, row("running", 0))).rejects.toThrow(/step must be a whole number/);
    await expect(store.save("r", 0, row("running", 0.5))).rejects.toThrow(/segment must be a whole number/);
    await store.save("r", 0, row("running", 0));
    await expect(store.recordCall("r", 0, -1, "x")).rejects.toThrow(/seq must be a whole number/);
    await expect(store.recordCall("r", 0, 0, 7 as unknown as string)).rejects.toThrow(InvalidInput);
  });
});
