import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CheckpointRow, RunAlreadyEnded, WAITING } from "@durable/core/store";
import { PrismaCheckpointStore } from "../src/index.js";
import { connect } from "../src/connection.js";
import { migrate, shippedMigrations } from "../src/migrate.js";
import { everyDatabase } from "./databases.js";

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

/** Long enough to stay live through any test on a busy machine. */
const LIVE = 60_000;
/** How many times a send races a save for WAITING. */
const RACES = 20;

const row = (segment: number, flow = "f"): CheckpointRow => ({
  status: "running",
  segment,
  name: flow,
  kind: "flow",
  sealed: "d1.-.{}",
});
const event = (seq: number, key: string) => ({ seq, key, sealed: `d1.-.${key}` });
const id = () => `run-${randomUUID()}`;

describe.each(targets)("PrismaCheckpointStore events on %s, a worker's store and a sender's", (_name, url) => {
  let worker: PrismaCheckpointStore;
  let sender: PrismaCheckpointStore;
  beforeAll(async () => {
    const target = url();
    const tablePrefix = `e${randomUUID().slice(0, 8)}_`;
    worker = new PrismaCheckpointStore(target, { tablePrefix });
    sender = new PrismaCheckpointStore(target, { tablePrefix });
    await worker.migrate();
  }, 60_000);
  afterAll(async () => {
    await worker.close();
    await sender.close();
  });

  it("a save for WAITING decided on the row the worker's store remembers misses an event sent since through another store, and takes no lease", async () => {
    const runId = id();
    await worker.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE }); // remembered with an empty inbox
    expect(await sender.sendEvent(runId, event(0, "paid"))).toBe(true);
    await worker.save(runId, 1, row(0), { owner: WAITING, ms: LIVE, events: 0 });
    expect(await worker.leaseOf(runId)).toBeUndefined();

    await worker.save(runId, 2, row(0), { owner: WAITING, ms: LIVE, events: 1 });
    expect(await worker.leaseOf(runId)).toMatchObject({ owner: WAITING });
    expect(await sender.sendEvent(runId, event(1, "shipped"))).toBe(true);
    expect(await worker.leaseOf(runId)).toBeUndefined();
    await worker.save(runId, 3, row(1), { owner: "worker-b", ms: LIVE });
    expect(await worker.leaseOf(runId)).toMatchObject({ owner: "worker-b" });
    expect((await worker.inbox(runId)).map((e) => e.key)).toEqual(["paid", "shipped"]);
  });

  it(`a send racing a save for WAITING that saw no event never leaves the run waiting (${RACES} races)`, async () => {
    for (let i = 0; i < RACES; i++) {
      const runId = id();
      await worker.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
      await Promise.all([
        worker.save(runId, 1, row(0), { owner: WAITING, ms: LIVE, events: 0 }),
        sender.sendEvent(runId, event(0, "paid")),
      ]);
      expect(await worker.leaseOf(runId), `race ${i}`).toBeUndefined();
    }
  }, 60_000);
});

describe.each(targets)("a database of the store before events, on %s", (_name, url) => {
  it("migrates in place: its runs stay, each with an empty inbox that takes events", async () => {
    const target = url();
    const tablePrefix = `v${randomUUID().slice(0, 8)}_`;
    const old = connect(target, { tablePrefix });
    const client = await old.client();
    const before = shippedMigrations(old.provider).filter((m) => m.name < "0005");
    expect(await migrate(old, client, before)).toEqual(["0001_init", "0002_leases", "0003_inspect", "0004_decisions"]);
    // The rows the store wrote before events.
    for (const [runId, status] of [
      ["old-running", "running"],
      ["old-done", "done"],
    ] as const) {
      await client.$executeRawUnsafe(
        old.sql(
          `INSERT INTO ${old.tables.runs} ("run_id", "flow", "kind", "step", "status", "segment", "segment_calls") VALUES (?, 'old', 'flow', 0, ?, 0, 0)`,
        ),
        runId,
        status,
      );
      await client.$executeRawUnsafe(
        old.sql(
          `INSERT INTO ${old.tables.checkpoints} ("run_id", "step", "status", "segment", "flow", "kind", "sealed") VALUES (?, 0, ?, 0, 'old', 'flow', 'd1.-.{}')`,
        ),
        runId,
        status,
      );
    }
    await old.release();

    const store = new PrismaCheckpointStore(target, { tablePrefix });
    expect(await store.migrate()).toEqual(["0005_events", "0006_queues", "0007_streams"]);
    expect(await store.migrate()).toEqual([]);
    expect(await store.inbox("old-running")).toEqual([]);
    await store.save("old-running", 1, row(0, "old"), { owner: WAITING, ms: LIVE, events: 0 });
    expect(await store.leaseOf("old-running")).toMatchObject({ owner: WAITING });
    expect(await store.sendEvent("old-running", event(0, "paid"))).toBe(true);
    expect(await store.sendEvent("old-running", event(1, "paid"))).toBe(false);
    expect(await store.leaseOf("old-running")).toBeUndefined();
    expect(await store.inbox("old-running")).toEqual([
      { runId: "old-running", seq: 0, key: "paid", sealed: "d1.-.paid" },
    ]);
    await expect(store.sendEvent("old-done", event(0, "late"))).rejects.toBeInstanceOf(RunAlreadyEnded);
    await store.close();
  });
});
