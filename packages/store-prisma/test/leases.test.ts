import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  type LeaseClaim,
  LeaseHeld,
  type RunStatus,
} from "@durable/core/store";
import { PrismaCheckpointStore } from "../src/index.js";
import { connect } from "../src/connection.js";
import { migrate, shippedMigrations } from "../src/migrate.js";
import { everyDatabase } from "./databases.js";

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

/** Long enough to stay live through any test on a busy machine. */
const LIVE = 60_000;
const realNow = Date.now.bind(Date);
afterEach(() => void vi.restoreAllMocks());

const row = (segment: number, status: RunStatus = "running", flow = "f"): CheckpointRow => ({
  status,
  segment,
  name: flow,
  kind: "flow",
  sealed: "d1.-.{}",
});

/** The error `promise` fails with (undefined if it resolves). */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** Every id the listing yields, in order. */
async function list(store: PrismaCheckpointStore, flow: string, claimable = true): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(flow, { claimable })) ids.push(id);
  return ids;
}

/** Waits until the run's lease ran out by the store's clock (it polls `leaseOf`). */
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

describe.each(targets)("PrismaCheckpointStore leases on %s", (_name, url) => {
  let store: PrismaCheckpointStore;
  beforeAll(async () => {
    store = new PrismaCheckpointStore(url(), { tablePrefix: `l${randomUUID().slice(0, 8)}_` });
    await store.migrate();
  }, 60_000);
  afterAll(() => store.close());
  const id = () => `run-${randomUUID()}`;

  it("a live lease refuses another owner's claim with LeaseHeld naming the owner and the expiry, and writes nothing", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    const held = await store.leaseOf(runId);
    expect(held).toMatchObject({ owner: "worker-a" });
    const error = await failure(store.save(runId, 1, row(1), { owner: "worker-b", ms: LIVE }));
    expect(error).toBeInstanceOf(LeaseHeld);
    expect(error).toMatchObject({ runId, owner: "worker-a", expiresAt: held?.expiresAt });
    expect((error as Error).message).toContain('"worker-a"');
    expect((error as Error).message).toContain(new Date(held?.expiresAt ?? 0).toISOString());
    // Nor does a save without a lease claim it.
    expect(await failure(store.save(runId, 1, row(1)))).toBeInstanceOf(LeaseHeld);
    expect((await store.latest(runId)).step).toBe(0);
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-a", expiresAt: held?.expiresAt });
  });

  it("the same owner may claim again, and its lease runs from the store's now", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    const before = await store.leaseOf(runId);
    await store.save(runId, 1, row(1), { owner: "worker-a", ms: 2 * LIVE });
    const after = await store.leaseOf(runId);
    expect(after?.owner).toBe("worker-a");
    expect(after?.expiresAt).toBeGreaterThanOrEqual((before?.now ?? 0) + 2 * LIVE);
    // A step of the same segment is no claim: it renews the lease too.
    await store.save(runId, 2, row(1), { owner: "worker-a", ms: LIVE });
    expect((await store.latest(runId)).step).toBe(2);
  });

  it("takeOver claims a live lease; the old owner is fenced and cannot renew", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    await store.save(runId, 1, row(1), { owner: "worker-b", ms: LIVE, takeOver: true });
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-b" });
    expect(await failure(store.save(runId, 2, row(0), { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(
      CheckpointConflict,
    );
    expect(await failure(store.renew(runId, 0, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
    // Nor may the old owner renew at the new segment: the lease is another's.
    expect(await failure(store.renew(runId, 1, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-b" });
  });

  it("a lease runs out by the store's clock: then another owner claims it, and the listing offers it", async () => {
    const runId = id();
    const flow = `f-${randomUUID()}`;
    await store.save(runId, 0, row(0, "running", flow), { owner: "worker-a", ms: 400 });
    const held = await store.leaseOf(runId);
    expect((held?.expiresAt ?? 0) - (held?.now ?? 0)).toBeLessThanOrEqual(400);
    if ((held?.expiresAt ?? 0) > (held?.now ?? 0)) expect(await list(store, flow)).toEqual([]);
    await untilRunOut(store, runId);
    expect(await list(store, flow)).toEqual([runId]);
    await store.save(runId, 1, row(1, "running", flow), { owner: "worker-b", ms: LIVE });
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-b" });
    expect(await list(store, flow)).toEqual([]);
  });

  it("claims racing for a run whose lease ran out: exactly one wins", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: 1 });
    await untilRunOut(store, runId);
    const claims = Array.from({ length: 8 }, (_, i) =>
      failure(store.save(runId, 1, row(1), { owner: `worker-${i}`, ms: LIVE })),
    );
    const errors = await Promise.all(claims);
    expect(errors.filter((error) => error === undefined)).toHaveLength(1);
    for (const error of errors.filter((e) => e !== undefined)) expect(error).toBeInstanceOf(CheckpointConflict);
    const winner = errors.indexOf(undefined);
    expect(await store.leaseOf(runId)).toMatchObject({ owner: `worker-${winner}` });
  });

  it("renew extends the owner's lease from the store's now and returns it; it is refused to anyone else", async () => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: 1000 });
    const renewed = await store.renew(runId, 0, { owner: "worker-a", ms: LIVE });
    const view = await store.leaseOf(runId);
    expect(renewed).toEqual({ owner: "worker-a", expiresAt: view?.expiresAt });
    expect(renewed.expiresAt).toBeGreaterThan((view?.now ?? 0) + LIVE - 10_000);
    expect(await failure(store.renew(runId, 0, { owner: "worker-b", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
    expect(await failure(store.renew(runId, 1, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
    expect(await failure(store.renew(id(), 0, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointNotFound);
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-a", expiresAt: renewed.expiresAt });
    // A lease that ran out is still its owner's to renew, until someone claims it.
    const late = id();
    await store.save(late, 0, row(0), { owner: "worker-a", ms: 1 });
    await untilRunOut(store, late);
    expect((await store.renew(late, 0, { owner: "worker-a", ms: LIVE })).owner).toBe("worker-a");
  });

  it("release makes the run claimable at once; a release by another owner or of another segment does nothing", async () => {
    const runId = id();
    const flow = `f-${randomUUID()}`;
    await store.save(runId, 0, row(0, "running", flow), { owner: "worker-a", ms: LIVE });
    await store.release(runId, 0, "worker-b");
    await store.release(runId, 1, "worker-a");
    await store.release(id(), 0, "worker-a");
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-a" });
    expect(await list(store, flow)).toEqual([]);
    await store.release(runId, 0, "worker-a");
    expect(await store.leaseOf(runId)).toBeUndefined();
    expect(await list(store, flow)).toEqual([runId]);
    expect(await failure(store.renew(runId, 0, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
    await store.save(runId, 1, row(1, "running", flow), { owner: "worker-b", ms: LIVE });
    expect(await store.leaseOf(runId)).toMatchObject({ owner: "worker-b" });
  });

  it.each(["paused", "done", "failed"] as const)("a %s save releases the lease", async (status) => {
    const runId = id();
    await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
    await store.save(runId, 1, row(0, status), { owner: "worker-a", ms: LIVE });
    expect(await store.leaseOf(runId)).toBeUndefined();
    expect(await failure(store.renew(runId, 0, { owner: "worker-a", ms: LIVE }))).toBeInstanceOf(CheckpointConflict);
  });

  it("a running save without a lease, or with ms 0, releases it; leaseOf of an unknown run is undefined", async () => {
    for (const lease of [undefined, { owner: "worker-a", ms: 0 }] as Array<LeaseClaim | undefined>) {
      const runId = id();
      await store.save(runId, 0, row(0), { owner: "worker-a", ms: LIVE });
      await store.save(runId, 1, row(0), lease);
      expect(await store.leaseOf(runId)).toBeUndefined();
    }
    expect(await store.leaseOf(id())).toBeUndefined();
  });

  it("the claimable listing, page by page, holds released, run-out and lease-less running runs, each once; not live, paused or ended ones", async () => {
    const flow = `f-${randomUUID()}`;
    const save = (runId: string, status: RunStatus, lease?: LeaseClaim) =>
      store.save(runId, 0, row(0, status, flow), lease);
    // More than a page (500) of released and of run-out leases, so both ranges turn a page.
    const released = Array.from({ length: 520 }, (_, i) => `released-${i}`);
    const ranOut = Array.from({ length: 520 }, (_, i) => `ran-out-${i}`);
    const live = Array.from({ length: 20 }, (_, i) => `live-${i}`);
    const paused = Array.from({ length: 5 }, (_, i) => `paused-${i}`);
    const inBatches = async (ids: string[], each: (runId: string) => Promise<void>) => {
      for (let i = 0; i < ids.length; i += 20) await Promise.all(ids.slice(i, i + 20).map(each));
    };
    await inBatches(released, (runId) => save(runId, "running"));
    await inBatches(ranOut, (runId) => save(runId, "running", { owner: "worker-a", ms: 1 }));
    await inBatches(live, (runId) => save(runId, "running", { owner: "worker-a", ms: LIVE }));
    await inBatches(paused, (runId) => save(runId, "paused", { owner: "worker-a", ms: LIVE }));
    await save("done-0", "done");
    await save("failed-0", "failed");
    await store.save("elsewhere", 0, row(0, "running", `${flow}-other`));
    // Their leases last 1 ms: the last one saved runs out last.
    await untilRunOut(store, ranOut.at(-1) ?? "");
    const claimable = await list(store, flow);
    expect(claimable).toHaveLength(new Set(claimable).size);
    expect(claimable.sort()).toEqual([...released, ...ranOut].sort());
    const unfinished = await list(store, flow, false);
    expect(unfinished.sort()).toEqual([...released, ...ranOut, ...live, ...paused].sort());
  }, 120_000);

  it("a worker's clock changes nothing: Date.now an hour ahead or behind leaves every expiry to the store's clock", async () => {
    for (const offset of [3_600_000, -3_600_000]) {
      vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset);
      const live = id();
      await store.save(live, 0, row(0), { owner: "worker-a", ms: LIVE });
      const lease = await store.leaseOf(live);
      expect(Math.abs((lease?.now ?? 0) - realNow())).toBeLessThan(10_000);
      expect((lease?.expiresAt ?? 0) - (lease?.now ?? 0)).toBeGreaterThan(LIVE - 10_000);
      expect(await failure(store.save(live, 1, row(1), { owner: "worker-b", ms: LIVE }))).toBeInstanceOf(LeaseHeld);
      const renewed = await store.renew(live, 0, { owner: "worker-a", ms: LIVE });
      expect(Math.abs(renewed.expiresAt - (realNow() + LIVE))).toBeLessThan(10_000);
      const short = id();
      const flow = `f-${randomUUID()}`;
      await store.save(short, 0, row(0, "running", flow), { owner: "worker-a", ms: 300 });
      await untilRunOut(store, short);
      expect(await list(store, flow)).toEqual([short]);
      await store.save(short, 1, row(1, "running", flow), { owner: "worker-b", ms: LIVE });
      vi.restoreAllMocks();
    }
  }, 60_000);
});

describe.each(targets)("a database of the store before leases, on %s", (name, url) => {
  it("migrates in place: its runs stay, with no lease, and the running ones are claimable", async () => {
    const target = url();
    const tablePrefix = `o${randomUUID().slice(0, 8)}_`;
    const old = connect(target, { tablePrefix });
    const client = await old.client();
    const first = shippedMigrations(old.provider).filter((m) => m.name === "0001_init");
    expect(await migrate(old, client, first)).toEqual(["0001_init"]);
    // The rows the store wrote before leases.
    for (const [runId, status] of [
      ["old-running", "running"],
      ["old-paused", "paused"],
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
    expect(await store.migrate()).toEqual([
      "0002_leases",
      "0003_inspect",
      "0004_decisions",
      "0005_events",
      "0006_queues",
      "0007_streams",
    ]);
    expect(await store.migrate()).toEqual([]);
    expect((await store.latest("old-running")).status).toBe("running");
    expect((await list(store, "old", false)).sort()).toEqual(["old-paused", "old-running"]);
    expect(await list(store, "old")).toEqual(["old-running"]);
    expect(await store.leaseOf("old-running")).toBeUndefined();
    await store.save("old-running", 1, { ...row(1), name: "old" }, { owner: "worker-a", ms: LIVE });
    expect(await store.leaseOf("old-running")).toMatchObject({ owner: "worker-a" });
    expect(await list(store, "old")).toEqual([]);
    expect(await claimableIndexColumns(name, target, `${tablePrefix}runs`)).toEqual([
      "flow",
      "status",
      "waits_for_decision",
      "queue",
      "lease_expires_at",
      "run_id",
    ]);
    await store.close();
  });
});

describe("the claimable index", () => {
  it("is declared in the Prisma models as the migrations make it", () => {
    const models = readFileSync(fileURLToPath(new URL("../prisma/models.prisma", import.meta.url)), "utf8");
    expect(models).toContain(
      '@@index([flow, status, waitsForDecision, queue, leaseExpiresAt, runId], map: "durable_runs_claimable_idx")',
    );
    for (const provider of ["postgresql", "sqlite"] as const) {
      const sql = shippedMigrations(provider).find((m) => m.name === "0006_queues")?.sql;
      expect(sql).toContain('"__PREFIX__runs_claimable_idx"');
      expect(sql).toMatch(/\("flow", "status", "waits_for_decision", "queue", "lease_expires_at", "run_id"\);/);
    }
  });
});

/** The columns of the claimable index of `table`, in order, as the database reports them. */
async function claimableIndexColumns(name: string, url: string, table: string): Promise<string[]> {
  const index = `${table.replace(/runs$/, "")}runs_claimable_idx`;
  if (name === "SQLite") {
    const file = new Database(url.slice("file:".length));
    try {
      return (file.prepare(`PRAGMA index_info("${index}")`).all() as Array<{ name: string }>).map((c) => c.name);
    } finally {
      file.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ column: string }>(
      `SELECT a.attname AS "column" FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
       WHERE c.relname = $1 ORDER BY k.n`,
      [index],
    );
    return rows.map((r) => r.column);
  } finally {
    await client.end();
  }
}
