import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  CheckpointStoreCorrupt,
  LeaseHeld,
  QueueFull,
  type QueuePlace,
  type RunStatus,
} from "@durable/core/store";
import { connect } from "../src/connection.js";
import { PrismaCheckpointStore } from "../src/index.js";
import { migrate, shippedMigrations } from "../src/migrate.js";
import { queuedPage, type QueuedCursor } from "../src/queued.js";
import { everyDatabase } from "./databases.js";

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

/** Long enough to stay live through any test on a busy machine; short enough to wait out. */
const LIVE = 60_000;
const SHORT = 400;

const id = () => `run-${randomUUID()}`;

/** A row of a run of `flow`, on `place` (none: on no queue). */
const row = (flow: string, place?: QueuePlace, segment = 0, status: RunStatus = "running"): CheckpointRow => ({
  status,
  segment,
  name: flow,
  kind: "flow",
  sealed: "d1.-.{}",
  ...(place === undefined ? {} : { queue: place }),
});

/** The error `promise` fails with (undefined if it resolves). */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** The run ids `listQueued` gives, in its order. */
async function listed(store: PrismaCheckpointStore, queue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of store.listQueued(queue)) ids.push(run.runId);
  return ids;
}

/** Every id the claimable listing yields. */
async function claimable(store: PrismaCheckpointStore, flow: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const runId of store.listUnfinished(flow, { claimable: true })) ids.push(runId);
  return ids;
}

/** Waits until the run's lease ran out by the store's clock. */
async function untilRunOut(store: PrismaCheckpointStore, runId: string): Promise<void> {
  await expect
    .poll(
      async () => {
        const lease = await store.leaseOf(runId);
        return lease === undefined || lease.expiresAt <= lease.now;
      },
      { timeout: 10_000, interval: 50 },
    )
    .toBe(true);
}

describe.each(targets)("PrismaCheckpointStore queues on %s", (_name, url) => {
  const tablePrefix = `q${randomUUID().slice(0, 8)}_`;
  let target: string;
  let store: PrismaCheckpointStore;
  /** A second store on the same tables: it knows none of the runs the first wrote. */
  let other: PrismaCheckpointStore;
  beforeAll(async () => {
    target = url();
    store = new PrismaCheckpointStore(target, { tablePrefix });
    await store.migrate();
    other = new PrismaCheckpointStore(target, { tablePrefix });
  }, 60_000);
  afterAll(async () => {
    await store.close();
    await other.close();
  });

  /** A queue of the test's own, with `limits`. */
  const queueOf = (limits: Omit<QueuePlace, "queue" | "priority"> = {}): QueuePlace => ({
    queue: `queue-${randomUUID()}`,
    priority: 0,
    ...limits,
  });

  /** Starts a queued run as a runner does: step 0, no lease. */
  async function queued(flow: string, place: QueuePlace): Promise<string> {
    const runId = id();
    await store.save(runId, 0, row(flow, place));
    return runId;
  }

  it("a holder's save after its lease ran out is a take: QueueFull while the queue is full, whether the store wrote the run last or not", async () => {
    const place = queueOf({ concurrency: 1 });
    const [a, b] = [await queued("f", place), await queued("f", place)];
    await store.save(a, 1, row("f", place, 1), { owner: "worker-a", ms: SHORT });
    await untilRunOut(store, a);
    await other.save(b, 1, row("f", place, 1), { owner: "worker-b", ms: LIVE });
    // `store` wrote a last (its row is known: no read), `other` never did (it reads the row).
    for (const writer of [store, other]) {
      const error = await failure(writer.save(a, 2, row("f", place, 1), { owner: "worker-a", ms: LIVE }));
      expect(error).toBeInstanceOf(QueueFull);
      expect(error).toMatchObject({ limit: "concurrency" });
      expect((await store.latest(a)).step).toBe(1);
    }
    await other.save(b, 2, row("f", place, 1, "done"));
    await store.save(a, 2, row("f", place, 1), { owner: "worker-a", ms: LIVE });
    expect(await store.leaseOf(a)).toMatchObject({ owner: "worker-a" });
  });

  it("a holder's saves and renewals while its lease is live are no take: accepted on a full queue", async () => {
    const place = queueOf({ concurrency: 1 });
    const [a, b] = [await queued("f", place), await queued("f", place)];
    await store.save(a, 1, row("f", place, 1), { owner: "worker-a", ms: LIVE });
    for (const [step, writer] of [
      [2, store],
      [3, other],
    ] as const)
      await writer.save(a, step, row("f", place, 1), { owner: "worker-a", ms: LIVE });
    await other.renew(a, 1, { owner: "worker-a", ms: LIVE });
    await store.commit(a, [
      { kind: "record", segment: 1, seq: 0, sealed: "d1.-.call" },
      { kind: "save", step: 4, row: row("f", place, 1), lease: { owner: "worker-a", ms: LIVE } },
    ]);
    const error = await failure(other.save(b, 1, row("f", place, 1), { owner: "worker-b", ms: LIVE }));
    expect(error).toBeInstanceOf(QueueFull);
  });

  it("a run's place is its step 0's: a later row naming other limits, or a queue, changes nothing", async () => {
    const place = queueOf({ concurrency: 1 });
    const roomy = { ...place, concurrency: 5 };
    const [a, b] = [await queued("f", place), await queued("f", place)];
    await store.save(a, 1, row("f", roomy, 1), { owner: "worker-a", ms: LIVE });
    expect(await failure(other.save(b, 1, row("f", roomy, 1), { owner: "worker-b", ms: LIVE }))).toBeInstanceOf(
      QueueFull,
    );
    const flow = `plain-${randomUUID()}`;
    const plain = id();
    await store.save(plain, 0, row(flow));
    await store.save(plain, 1, row(flow, place));
    expect(await claimable(other, flow)).toEqual([plain]);
    expect(await listed(other, place.queue)).toEqual([b]);
    // The runs on no queue are on no queue named '' either.
    expect(await listed(other, "")).toEqual([]);
    // Taking it counts nothing of the queue, full as it is.
    await other.save(plain, 2, row(flow, place, 1), { owner: "worker-c", ms: LIVE });
  });

  it("a holder's save at step 1 after its step 0's lease ran out starts the run again: it counts against the rate", async () => {
    const place = queueOf({ rate: { limit: 1, windowMs: LIVE } });
    const runId = id();
    await store.save(runId, 0, row("f", place), { owner: "worker-a", ms: SHORT });
    await untilRunOut(store, runId);
    const error = await failure(store.save(runId, 1, row("f", place), { owner: "worker-a", ms: LIVE }));
    expect(error).toBeInstanceOf(QueueFull);
    expect(error).toMatchObject({ limit: "rate" });
    // A step-0 start refused by the rate writes nothing: the run is not there.
    const refused = id();
    expect(await failure(store.save(refused, 0, row("f", place), { owner: "worker-b", ms: LIVE }))).toBeInstanceOf(
      QueueFull,
    );
    expect(await failure(store.latest(refused))).toBeInstanceOf(CheckpointNotFound);
  });

  it("lists a queue page by page, priority by priority, leaving out the runs it may not claim", async () => {
    const place = queueOf();
    const order: Array<[string, number]> = [];
    for (const priority of [1, 0, 1, -2, 5, 0, -2, 1, 0, -2, 7]) {
      const runId = id();
      await store.save(runId, 0, row("f", { ...place, priority }));
      order.push([runId, priority]);
    }
    // Two runs held: no page gives them.
    const held = [order[0]?.[0], order[6]?.[0]] as string[];
    for (const runId of held) await store.save(runId, 1, row("f", place, 1), { owner: "worker-a", ms: LIVE });
    const expected = order
      .filter(([runId]) => !held.includes(runId))
      .map(([runId, priority], i) => ({ runId, priority, i }))
      .sort((x, y) => y.priority - x.priority || x.i - y.i)
      .map(({ runId }) => runId);
    expect(await listed(other, place.queue)).toEqual(expected);
    const db = connect(target, { tablePrefix });
    const client = await db.client();
    try {
      const read = <T>(query: string, ...values: unknown[]) => client.$queryRawUnsafe<T[]>(db.sql(query), ...values);
      for (const limit of [1, 2, 3]) {
        const paged: string[] = [];
        let cursor: QueuedCursor | undefined;
        do {
          const page = await queuedPage(db, read, place.queue, cursor, limit);
          paged.push(...page.runs.map((run) => run.runId));
          cursor = page.next;
        } while (cursor !== undefined);
        expect(paged, `pages of ${limit}`).toEqual(expected);
      }
    } finally {
      await db.release();
    }
  });

  it("a queue column that no save writes is CheckpointStoreCorrupt on the run's next write", async () => {
    const place = queueOf({ concurrency: 2 });
    const runId = await queued("f", place);
    const db = connect(target, { tablePrefix });
    const client = await db.client();
    try {
      await client.$executeRawUnsafe(
        db.sql(`UPDATE ${db.tables.runs} SET "queue_concurrency" = 0 WHERE "run_id" = ?`),
        runId,
      );
    } finally {
      await db.release();
    }
    const error = await failure(other.save(runId, 1, row("f", place, 1), { owner: "worker-a", ms: LIVE }));
    expect(error).toBeInstanceOf(CheckpointStoreCorrupt);
    expect((error as Error).message).toContain("queue");
  });
});

describe.each(targets)("a database of the store before queues, on %s", (_name, url) => {
  it("migrates in place: its runs stay claimable, on no queue, and queued runs start beside them", async () => {
    const target = url();
    const tablePrefix = `v${randomUUID().slice(0, 8)}_`;
    const old = connect(target, { tablePrefix });
    const client = await old.client();
    const before = shippedMigrations(old.provider).filter((m) => m.name < "0006");
    expect(await migrate(old, client, before)).toHaveLength(5);
    await client.$executeRawUnsafe(
      old.sql(
        `INSERT INTO ${old.tables.runs} ("run_id", "flow", "kind", "step", "status", "segment", "segment_calls") VALUES ('old-running', 'old', 'flow', 0, 'running', 0, 0)`,
      ),
    );
    await client.$executeRawUnsafe(
      old.sql(
        `INSERT INTO ${old.tables.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed") VALUES ('old-running', 0, 'running', 0, 'old', 'flow', 'd1.-.{}')`,
      ),
    );
    await old.release();

    const store = new PrismaCheckpointStore(target, { tablePrefix });
    expect(await store.migrate()).toEqual(["0006_queues", "0007_streams"]);
    const place = { queue: "q", priority: 0, concurrency: 1 };
    await store.save("new-queued", 0, row("old", place));
    expect(await claimable(store, "old")).toEqual(["old-running"]);
    expect(await listed(store, "q")).toEqual(["new-queued"]);
    await store.save("old-running", 1, row("old", place, 1), { owner: "worker-a", ms: LIVE });
    await store.save("new-queued", 1, row("old", place, 1), { owner: "worker-b", ms: LIVE });
    await store.close();
  });
});

const postgres = targets.find(([name]) => name === "PostgreSQL");

describe.runIf(postgres !== undefined)("takes of one queue racing on PostgreSQL", () => {
  const STORES = 6;
  const TAKERS = 3;
  const RUNS = 40;
  const LIMIT = 2;

  it(`${STORES} stores (a pool each) with ${TAKERS} takers each never hold more than ${LIMIT} runs of a queue at once, by the takers' own records`, async () => {
    const target = postgres?.[1]() as string;
    const tablePrefix = `r${randomUUID().slice(0, 8)}_`;
    const stores = Array.from(
      { length: STORES },
      () => new PrismaCheckpointStore(target, { tablePrefix, poolSize: 3 }),
    );
    await stores[0]?.migrate();
    const place: QueuePlace = { queue: "raced", priority: 0, concurrency: LIMIT };
    const flow = "raced";
    // Half the runs wait on the queue; the other half are started by the takers with a lease (a take at step 0).
    const waiting = Array.from({ length: RUNS / 2 }, () => id());
    for (const runId of waiting) await stores[0]?.save(runId, 0, row(flow, place));
    const unstarted = Array.from({ length: RUNS / 2 }, () => id());
    // What each taker saw: from its take resolving to before it sent the save that ends the run.
    const held: Array<{ from: number; to: number }> = [];
    let refusals = 0;
    let ended = 0;
    const hold = async (store: PrismaCheckpointStore, runId: string, step: number, segment: number, owner: string) => {
      const from = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 20));
      // A holder's save on the way: no take, and it counts nothing.
      await store.save(runId, step + 1, row(flow, place, segment), { owner, ms: LIVE });
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
      held.push({ from, to: performance.now() });
      await store.save(runId, step + 2, row(flow, place, segment, "done"));
      ended += 1;
    };
    const taker = async (store: PrismaCheckpointStore, name: string) => {
      const give = Date.now() + 60_000;
      while (ended < RUNS && Date.now() < give) {
        const owner = `${name}#${randomUUID().slice(0, 8)}`;
        const fresh = unstarted.pop();
        try {
          if (fresh !== undefined) {
            await store.save(fresh, 0, row(flow, place), { owner, ms: LIVE });
            await hold(store, fresh, 0, 0, owner);
            continue;
          }
          const [runId] = await listed(store, place.queue);
          if (runId === undefined) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          await store.save(runId, 1, row(flow, place, 1), { owner, ms: LIVE });
          await hold(store, runId, 1, 1, owner);
        } catch (error) {
          if (!(error instanceof QueueFull || error instanceof CheckpointConflict || error instanceof LeaseHeld))
            throw error;
          if (error instanceof QueueFull) refusals += 1;
          if (fresh !== undefined && error instanceof QueueFull) unstarted.push(fresh);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
        }
      }
    };
    try {
      await Promise.all(
        stores.flatMap((store, s) => Array.from({ length: TAKERS }, (_, t) => taker(store, `taker-${s}-${t}`))),
      );
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
    // The most runs held at once by the takers' records: +1 at each take, -1 at each end (an end first on a tie).
    const events = held.flatMap(({ from, to }) => [
      { at: from, change: 1 },
      { at: to, change: -1 },
    ]);
    events.sort((x, y) => x.at - y.at || x.change - y.change);
    let holding = 0;
    let most = 0;
    for (const { change } of events) {
      holding += change;
      most = Math.max(most, holding);
    }
    expect(ended).toBe(RUNS);
    expect(most).toBeLessThanOrEqual(LIMIT);
    // The race was one: the queue was full for some takes, and its limit was reached.
    expect(refusals).toBeGreaterThan(0);
    expect(most).toBe(LIMIT);
  }, 120_000);
});
