import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  InvalidInput,
  LeaseHeld,
  type LeaseClaim,
  MAX_BATCH_WRITES,
  type RunStatus,
  type RunWrite,
} from "@durable/core/store";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaCheckpointStore } from "../src/index.js";
import { PrismaClient as SqliteClient } from "../src/generated/sqlite/client.js";
import { everyDatabase, sqliteUrl } from "./databases.js";

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

const LIVE = 60_000;

const sealedRecord = (seq: number, tag = "") => `d1.-.{"seq":${seq},"tag":"${tag}"}`;

const record = (segment: number, seq: number, tag = ""): RunWrite => ({
  kind: "record",
  segment,
  seq,
  sealed: sealedRecord(seq, tag),
});

const row = (step: number, segment = 0, status: RunStatus = "running", flow = "f"): CheckpointRow => ({
  status,
  segment,
  name: flow,
  kind: "flow",
  sealed: `d1.-.{"step":${step}}`,
});

const save = (step: number, segment = 0, status: RunStatus = "running", lease?: LeaseClaim, flow = "f"): RunWrite => ({
  kind: "save",
  step,
  row: row(step, segment, status, flow),
  lease,
});

/** The error `promise` fails with (undefined if it resolves). */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** One write as `save` or `recordCall` makes it. */
function single(store: PrismaCheckpointStore, runId: string, write: RunWrite): Promise<void> {
  return write.kind === "record"
    ? store.recordCall(runId, write.segment, write.seq, write.sealed)
    : store.save(runId, write.step, write.row, write.lease);
}

/** Everything the store holds of a run: its latest checkpoint, its records and its lease. */
async function everything(store: PrismaCheckpointStore, runId: string) {
  const latest = await store.latest(runId).catch((error: unknown) => {
    if (error instanceof CheckpointNotFound) return undefined;
    throw error;
  });
  return { latest, calls: await store.calls(runId), lease: await store.leaseOf(runId).then((l) => l?.expiresAt) };
}

/** A batch refused at `at`: the writes before it are good ones. */
interface Refusal {
  readonly name: string;
  readonly setup: readonly RunWrite[];
  readonly batch: readonly RunWrite[];
  readonly at: number;
  readonly error: typeof CheckpointConflict | typeof CheckpointNotFound | typeof LeaseHeld;
}

const REFUSALS: readonly Refusal[] = [
  {
    name: "a seq that skips one, after good records",
    setup: [save(0)],
    batch: [record(0, 0), record(0, 1), record(0, 3)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a seq taken within the batch",
    setup: [save(0), record(0, 0)],
    batch: [record(0, 1), record(0, 1, "again")],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a record of a stale segment after a good checkpoint",
    setup: [save(0), save(1, 1)],
    batch: [save(2, 1), record(0, 0)],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a taken step after good records",
    setup: [save(0), save(1)],
    batch: [record(0, 0), save(1)],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a checkpoint of another flow after good records",
    setup: [save(0)],
    batch: [record(0, 0), save(1, 0, "running", undefined, "g")],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a record of an ended run",
    setup: [save(0, 0, "done")],
    batch: [record(0, 0)],
    at: 0,
    error: CheckpointConflict,
  },
  {
    name: "a checkpoint of an ended run",
    setup: [save(0, 0, "done")],
    batch: [save(1)],
    at: 0,
    error: CheckpointConflict,
  },
  {
    name: "a record after the batch's own checkpoint ended the run",
    setup: [save(0)],
    batch: [record(0, 0), save(1, 0, "done"), record(0, 1)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a claim of another owner's live lease, after good records",
    setup: [save(0, 0, "running", { owner: "holder", ms: LIVE })],
    batch: [record(0, 0), save(1, 1, "running", { owner: "claimer", ms: LIVE })],
    at: 1,
    error: LeaseHeld,
  },
  {
    name: "a record of the old segment after a claim in the batch",
    setup: [save(0)],
    batch: [record(0, 0), save(1, 1), record(0, 1)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a record of the new segment after a claim in the batch that is not seq 0",
    setup: [save(0), record(0, 0)],
    batch: [save(1, 1), record(1, 1)],
    at: 1,
    error: CheckpointConflict,
  },
  { name: "records of an unknown run", setup: [], batch: [record(0, 0)], at: 0, error: CheckpointNotFound },
  { name: "a first step that is not 0", setup: [], batch: [save(1), record(0, 0)], at: 0, error: CheckpointConflict },
  {
    name: "a bad record after the step 0 that starts the run",
    setup: [],
    batch: [save(0, 0, "running", { owner: "w", ms: LIVE }), record(0, 0), record(0, 2)],
    at: 2,
    error: CheckpointConflict,
  },
];

describe.each(targets)("PrismaCheckpointStore commit on %s", (_name, url) => {
  let store: PrismaCheckpointStore;
  /** Another store on the same tables: another worker's writes. */
  let other: PrismaCheckpointStore;
  beforeAll(async () => {
    const where = [url(), { tablePrefix: `b${randomUUID().slice(0, 8)}_` }] as const;
    store = new PrismaCheckpointStore(...where);
    await store.migrate();
    other = new PrismaCheckpointStore(...where);
  }, 60_000);
  afterAll(async () => {
    await other.close();
    await store.close();
  });

  it("decided on the row it last left, which another store moved since, writes nothing of its guess, and lands once decided again", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    // The renewal moves the row's lease: the store's guess of the row misses, and its guarded inserts must not land.
    await other.renew(runId, 0, { owner: "w", ms: 2 * LIVE });
    await store.commit(runId, [record(0, 0), save(1, 0, "running", { owner: "w", ms: LIVE }), record(0, 1)]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1]);
    expect((await other.history?.(runId))?.map((c) => c.step)).toEqual([0, 1]);
    // Records alone on a row another store moved: the same.
    await other.renew(runId, 0, { owner: "w", ms: 3 * LIVE });
    await store.commit(runId, [record(0, 2), record(0, 3)]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1, 2, 3]);
  });

  it("lands [records, checkpoint, records] whole, numbered on from what the run holds; single writes go on from it", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0));
    await store.recordCall(runId, 0, 0, sealedRecord(0));
    await store.commit(runId, [record(0, 1), record(0, 2), save(1), record(0, 3)]);
    expect(await store.latest(runId)).toMatchObject({ step: 1, sealed: row(1).sealed });
    expect((await store.calls(runId)).map((c) => [c.seq, c.sealed])).toEqual(
      [0, 1, 2, 3].map((seq) => [seq, sealedRecord(seq)]),
    );
    await store.recordCall(runId, 0, 4, "d1.-.r4");
    await store.save(runId, 2, row(2));
    expect(await failure(store.recordCall(runId, 0, 6, "d1.-.r6"))).toBeInstanceOf(CheckpointConflict);
  });

  it("starts a run with its lease, and a claim in a batch numbers its records from 0 in the new segment and fences the old", async () => {
    const runId = randomUUID();
    await store.commit(runId, [save(0, 0, "running", { owner: "a", ms: LIVE }), record(0, 0), record(0, 1)]);
    expect((await store.leaseOf(runId))?.owner).toBe("a");
    await store.commit(runId, [
      record(0, 2),
      save(1, 1, "running", { owner: "b", ms: LIVE, takeOver: true }),
      record(1, 0),
    ]);
    expect((await store.leaseOf(runId))?.owner).toBe("b");
    expect((await store.calls(runId)).map((c) => [c.segment, c.seq])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
      [1, 0],
    ]);
    expect(await failure(store.recordCall(runId, 0, 3, "d1.-.late"))).toBeInstanceOf(CheckpointConflict);
    await store.commit(runId, [record(1, 1), save(2, 1, "done")]);
    expect(await store.leaseOf(runId)).toBeUndefined();
  });

  it("keeps its owner's lease as it is while less than a third has passed, as a save does", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    const before = await store.leaseOf(runId);
    await store.commit(runId, [record(0, 0), save(1, 0, "running", { owner: "w", ms: LIVE }), record(0, 1)]);
    expect((await store.leaseOf(runId))?.expiresAt).toBe(before?.expiresAt);
  });

  it(`takes ${MAX_BATCH_WRITES} writes in one batch`, async () => {
    const runId = randomUUID();
    const records = Array.from({ length: MAX_BATCH_WRITES - 1 }, (_, seq) => record(0, seq, "x".repeat(200)));
    await store.commit(runId, [save(0), ...records]);
    const calls = await store.calls(runId);
    expect(calls).toHaveLength(MAX_BATCH_WRITES - 1);
    expect(calls.at(-1)?.seq).toBe(MAX_BATCH_WRITES - 2);
  }, 60_000);

  it.each(REFUSALS)(
    "refuses $name with the single write's error, and writes nothing of the batch",
    async ({ setup, batch, at, error }) => {
      const runId = randomUUID();
      for (const write of setup) await single(store, runId, write);
      const before = await everything(store, runId);
      const refused = await failure(store.commit(runId, batch));
      expect(refused).toBeInstanceOf(error);
      expect(await everything(store, runId)).toEqual(before);
      // The same writes one at a time: the good ones land, the refused one fails alike.
      for (const write of batch.slice(0, at)) await single(store, runId, write);
      const alone = await failure(single(store, runId, batch[at]!));
      expect(alone).toBeInstanceOf(error);
      if (refused instanceof LeaseHeld && alone instanceof LeaseHeld) {
        expect([refused.owner, refused.expiresAt]).toEqual([alone.owner, alone.expiresAt]);
      } else {
        expect((refused as Error).message).toBe((alone as Error).message);
      }
    },
  );

  it("refuses a malformed batch with InvalidInput before anything is read or written", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0));
    const before = await everything(store, runId);
    const malformed: unknown[] = [
      [],
      [save(1), save(2)],
      Array.from({ length: MAX_BATCH_WRITES + 1 }, (_, seq) => record(0, seq)),
      [record(0, 0), { ...record(0, 1), seq: -1 }],
      [record(0, 0), { ...record(0, 1), seq: 1.5 }],
      [record(0, 0), { ...record(0, 1), sealed: 7 }],
      [{ kind: "erase" }],
      [record(0, 0), save(1, 0, "running", { owner: "", ms: 1000 })],
      [save(1, 0, "running", { owner: "w", ms: -1 })],
      "not a batch",
    ];
    for (const batch of malformed) {
      expect(await failure(store.commit(runId, batch as RunWrite[])), JSON.stringify(batch)).toBeInstanceOf(
        InvalidInput,
      );
    }
    expect(await everything(store, runId)).toEqual(before);
  });

  it("a save and a record are checked as one-write batches: a step or seq that is not a whole number is InvalidInput", async () => {
    const runId = randomUUID();
    expect(await failure(store.save(runId, 0.5, row(0)))).toBeInstanceOf(InvalidInput);
    await store.save(runId, 0, row(0));
    expect(await failure(store.recordCall(runId, 0, -1, "d1.-.x"))).toBeInstanceOf(InvalidInput);
    expect(await everything(store, runId)).toMatchObject({ latest: { step: 0 }, calls: [] });
  });

  it("a retried record that was applied is applied once; another record under its number is refused", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0));
    await store.recordCall(runId, 0, 0, "d1.-.same");
    await store.recordCall(runId, 0, 0, "d1.-.same");
    expect(await failure(store.recordCall(runId, 0, 0, "d1.-.other"))).toBeInstanceOf(CheckpointConflict);
    await store.save(runId, 1, row(1, 1));
    // Fenced: the same record again is refused once the run moved to another segment.
    expect(await failure(store.recordCall(runId, 0, 0, "d1.-.same"))).toBeInstanceOf(CheckpointConflict);
    expect((await store.calls(runId)).map((c) => c.sealed)).toEqual(["d1.-.same"]);
  });
});

describe("PrismaCheckpointStore commit on a user's SQLite client (fromClient)", () => {
  let prisma: SqliteClient;
  let store: PrismaCheckpointStore;
  let other: PrismaCheckpointStore;
  beforeAll(async () => {
    prisma = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: sqliteUrl().slice("file:".length) }) });
    const options = { provider: "sqlite", tablePrefix: `u${randomUUID().slice(0, 8)}_` } as const;
    store = PrismaCheckpointStore.fromClient(prisma, options);
    other = PrismaCheckpointStore.fromClient(prisma, options);
    await store.migrate();
    await prisma.$executeRawUnsafe(`CREATE TABLE "app_orders" ("id" INTEGER, "paid" INTEGER)`);
    await prisma.$executeRawUnsafe(`INSERT INTO "app_orders" VALUES (1, 0)`);
  }, 60_000);
  afterAll(() => prisma.$disconnect());

  /** Another worker's commit of a run of its own, after which its caller writes the app's rows on the same client. */
  const appWriteAfter = (sql: string) =>
    other
      .commit(randomUUID(), [save(0, 0, "running", { owner: "b", ms: LIVE }), record(0, 0)])
      .then(() => prisma.$executeRawUnsafe(sql));
  const batch = [record(0, 0), save(1, 0, "running", { owner: "a", ms: LIVE }), record(0, 1)];

  it("an app write between a fenced batch's statements does not land its records", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "a", ms: LIVE });
    await other.save(runId, 1, row(1, 1), { owner: "b", ms: LIVE, takeOver: true });
    const [, refused] = await Promise.all([
      appWriteAfter(`UPDATE "app_orders" SET "paid" = 1`),
      failure(store.commit(runId, batch)),
    ]);
    expect(refused).toBeInstanceOf(CheckpointConflict);
    expect(await store.calls(runId)).toEqual([]);
  });

  it("an app write that changes nothing, between an applied batch's statements, drops none of its rows", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "a", ms: LIVE });
    await Promise.all([
      appWriteAfter(`UPDATE "app_orders" SET "paid" = 1 WHERE "id" = 42`),
      store.commit(runId, batch),
    ]);
    expect((await store.history(runId)).map((c) => c.step)).toEqual([0, 1]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1]);
  });
});
