import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  InvalidInput,
  LeaseHeld,
  type RunStatus,
} from "@durable/core/store";
import { SCHEMA_VERSION, SQLiteCheckpointStore } from "../src/index.js";
import { MIGRATIONS, tablesFor } from "../src/schema.js";
import { statementSql } from "../src/statements.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";

const created: SQLiteCheckpointStore[] = [];
const paths: string[] = [];
function open(path = newDatabasePath(), options: { synchronous?: "normal" } = {}): SQLiteCheckpointStore {
  const store = new SQLiteCheckpointStore(path, options);
  created.push(store);
  paths.push(path);
  return store;
}
afterAll(async () => {
  for (const store of created) await store.close();
  paths.forEach(removeDatabase);
});
afterEach(() => vi.restoreAllMocks());

const row = (status: RunStatus, segment: number, flow = "f"): CheckpointRow => ({
  status,
  segment,
  name: flow,
  kind: "flow",
  sealed: "d1.-.{}",
});
const MINUTE = 60_000;

/** The real clock, as `Date.now` would be unmocked. */
const realNow = () => performance.timeOrigin + performance.now();

async function listed(store: SQLiteCheckpointStore, flow = "f"): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(flow, { claimable: true })) ids.push(id);
  return ids.sort();
}

describe("claims of a leased run", () => {
  it("refuses another owner's claim while the lease is live, naming the owner and expiry, and writes nothing", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    const lease = await store.leaseOf("r");
    expect(lease?.owner).toBe("a");
    expect((lease?.expiresAt ?? 0) - (lease?.now ?? 0)).toBeGreaterThan(MINUTE - 5_000);

    const refused = await store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE }).catch((e) => e);
    expect(refused).toBeInstanceOf(LeaseHeld);
    expect(refused).toMatchObject({ runId: "r", owner: "a", expiresAt: lease?.expiresAt });
    expect(refused.message).toContain('"a"');
    expect(refused.message).toContain(new Date(lease?.expiresAt ?? 0).toISOString());
    expect((await store.latest("r")).step).toBe(0);
    expect(await store.leaseOf("r")).toMatchObject({ owner: "a", expiresAt: lease?.expiresAt });
  });

  it("lets the owner reclaim its own run, and a save in the same segment needs no claim", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("r", 1, row("running", 1), { owner: "a", ms: MINUTE });
    await store.save("r", 2, row("running", 1), { owner: "a", ms: MINUTE });
    expect((await store.latest("r")).step).toBe(2);
  });

  it("takes a live lease over with takeOver, and fences the old owner", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE, takeOver: true });
    expect(await store.leaseOf("r")).toMatchObject({ owner: "b" });
    await expect(store.renew("r", 0, { owner: "a", ms: MINUTE })).rejects.toThrow(CheckpointConflict);
    await expect(store.recordCall("r", 0, 0, "x")).rejects.toThrow(CheckpointConflict);
    await expect(store.save("r", 2, row("running", 0), { owner: "a", ms: MINUTE })).rejects.toThrow(CheckpointConflict);
  });

  it("lets another owner claim once the lease runs out by the store's clock", async () => {
    const store = open();
    // 1 s: the claim right after must still find it live on a busy machine.
    await store.save("r", 0, row("running", 0), { owner: "a", ms: 1_000 });
    await expect(store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE })).rejects.toThrow(LeaseHeld);
    await sleep(1_100);
    const lease = await store.leaseOf("r");
    expect(lease?.expiresAt).toBeLessThanOrEqual(lease?.now ?? 0);
    await store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE });
    expect(await store.leaseOf("r")).toMatchObject({ owner: "b" });
  });

  it("sees a lease written by another connection to the file", async () => {
    const first = open();
    const second = open(first.path);
    await first.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await expect(second.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE })).rejects.toThrow(LeaseHeld);
  });

  it("refuses lease terms that are not an owner of 1–200 characters and whole ms ≥ 0", async () => {
    const store = open();
    await expect(store.save("r", 0, row("running", 0), { owner: "", ms: 10 })).rejects.toThrow(InvalidInput);
    await expect(store.save("r", 0, row("running", 0), { owner: "x".repeat(201), ms: 10 })).rejects.toThrow(
      InvalidInput,
    );
    await expect(store.save("r", 0, row("running", 0), { owner: "a", ms: -1 })).rejects.toThrow(InvalidInput);
    await expect(store.save("r", 0, row("running", 0), { owner: "a", ms: 1.5 })).rejects.toThrow(InvalidInput);
    await expect(store.latest("r")).rejects.toThrow(CheckpointNotFound);
  });
});

describe("renew, release and the saves that release", () => {
  it("renews the owner's lease by the store's clock, and refuses anyone else", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: 1_000 });
    const before = await store.leaseOf("r");
    const renewed = await store.renew("r", 0, { owner: "a", ms: MINUTE });
    expect(renewed.owner).toBe("a");
    expect(renewed.expiresAt).toBeGreaterThan(before?.expiresAt ?? Number.POSITIVE_INFINITY);
    expect(await store.leaseOf("r")).toMatchObject(renewed);
    await expect(store.renew("r", 0, { owner: "b", ms: MINUTE })).rejects.toThrow(/held by "a", not "b"/);
    await expect(store.renew("r", 1, { owner: "a", ms: MINUTE })).rejects.toThrow(CheckpointConflict);
    await expect(store.renew("unknown", 0, { owner: "a", ms: MINUTE })).rejects.toThrow(CheckpointNotFound);
  });

  it("renews a lease that ran out but was not released, and not a released one", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: 1 });
    await sleep(20);
    await store.renew("r", 0, { owner: "a", ms: MINUTE });
    await store.release("r", 0, "a");
    await expect(store.renew("r", 0, { owner: "a", ms: MINUTE })).rejects.toThrow(/released/);
  });

  it("releases only for the holder of the latest segment, and the run is claimable at once", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.release("r", 0, "b");
    await store.release("r", 1, "a");
    await store.release("unknown", 0, "a");
    expect(await store.leaseOf("r")).toMatchObject({ owner: "a" });
    expect(await listed(store)).toEqual([]);
    await store.release("r", 0, "a");
    expect(await store.leaseOf("r")).toBeUndefined();
    expect(await listed(store)).toEqual(["r"]);
    await store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE });
    expect(await store.leaseOf("r")).toMatchObject({ owner: "b" });
  });

  it.each(["paused", "done", "failed"] as const)("a %s save releases the lease", async (status) => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("r", 1, row(status, 0), { owner: "a", ms: MINUTE });
    expect(await store.leaseOf("r")).toBeUndefined();
  });

  it("a running save without a lease, or with 0 ms, releases it", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("r", 1, row("running", 0));
    expect(await store.leaseOf("r")).toBeUndefined();
    await store.save("r", 2, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("r", 3, row("running", 0), { owner: "a", ms: 0 });
    expect(await store.leaseOf("r")).toBeUndefined();
    expect(await store.leaseOf("unknown")).toBeUndefined();
  });
});

describe("the claimable listing", () => {
  it("holds running runs that are released or ran out, not live-leased, paused, ended or other flows' runs", async () => {
    const store = open();
    await store.save("live", 0, row("running", 0), { owner: "a", ms: MINUTE });
    await store.save("ranOut", 0, row("running", 0), { owner: "a", ms: 1 });
    await store.save("released", 0, row("running", 0));
    await store.save("paused", 0, row("paused", 0));
    await store.save("done", 0, row("running", 0));
    await store.save("done", 1, row("done", 0));
    await store.save("other", 0, row("running", 0, "g"));
    await sleep(20);
    expect(await listed(store)).toEqual(["ranOut", "released"]);
    const unfinished: string[] = [];
    for await (const id of store.listUnfinished("f")) unfinished.push(id);
    expect(unfinished.sort()).toEqual(["live", "paused", "ranOut", "released"]);
  });

  it("streams past a page, each claimable run once", async () => {
    const store = open(newDatabasePath(), { synchronous: "normal" });
    const want: string[] = [];
    for (let i = 0; i < 1_300; i++) {
      const id = `r${String(i).padStart(4, "0")}`;
      const kind = i % 3;
      await store.save(id, 0, row("running", 0), kind === 0 ? undefined : { owner: "a", ms: kind === 1 ? 1 : MINUTE });
      if (kind !== 2) want.push(id);
    }
    await sleep(20);
    const ids: string[] = [];
    for await (const id of store.listUnfinished("f", { claimable: true })) ids.push(id);
    expect(ids.length).toBe(want.length);
    expect(ids.sort()).toEqual(want);
  });

  it("reads each page from the claimable index, in its order", () => {
    const store = open();
    const sql = statementSql(store.tables);
    const db = new Database(store.path, { readonly: true });
    const plan = (query: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...params) as Array<{ detail: string }>)
        .map((step) => step.detail)
        .join("\n");
    const released = plan(sql.claimableReleased, "f", "", 500);
    const ranOut = plan(sql.claimableRunOut, "f", 0, "", 500);
    db.close();
    // One step each: a range of the claimable index on the flow and the expiry, in the order pages go, so no sort.
    const index = `SEARCH ${store.tables.runs} USING COVERING INDEX ${store.tables.runs}_claimable`;
    expect(released).toBe(`${index} (flow=? AND lease_expires=? AND run_id>?)`);
    expect(ranOut).toBe(`${index} (flow=? AND (lease_expires,run_id)>(?,?) AND lease_expires<?)`);
  });
});

describe("the store's clock", () => {
  it("is SQLite's: moving Date.now an hour either way changes no expiry", async () => {
    const store = open();
    await store.save("r", 0, row("running", 0), { owner: "a", ms: MINUTE });
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + 3_600_000);
    await expect(store.save("r", 1, row("running", 1), { owner: "b", ms: MINUTE })).rejects.toThrow(LeaseHeld);
    const lease = await store.leaseOf("r");
    expect(Math.abs((lease?.now ?? 0) - realNow())).toBeLessThan(5_000);
    const renewed = await store.renew("r", 0, { owner: "a", ms: MINUTE });
    expect(Math.abs(renewed.expiresAt - MINUTE - realNow())).toBeLessThan(5_000);

    await store.save("s", 0, row("running", 0), { owner: "a", ms: 50 });

    vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
    await sleep(120);
    expect(await listed(store)).toEqual(["s"]);
    await store.save("s", 1, row("running", 1), { owner: "b", ms: MINUTE });
  });
});

describe("schema version 2", () => {
  it("migrates a version 1 file in place: its runs stay, released and claimable", async () => {
    const path = newDatabasePath();
    const t = tablesFor("durable_");
    const db = new Database(path);
    db.exec(`CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`);
    db.exec(`INSERT INTO ${t.meta} VALUES ('owner', '@durable/store-sqlite'), ('schema_version', '1')`);
    db.exec(MIGRATIONS[0]?.(t) ?? "");
    const insertRun = db.prepare(`INSERT INTO ${t.runs} VALUES (?, 'f', 'flow', 1, ?, 0, 2)`);
    const insertCheckpoint = db.prepare(`INSERT INTO ${t.checkpoints} VALUES (?, ?, ?, 0, 'f', 'flow', 'd1.-.{}')`);
    for (const [runId, status] of [
      ["old1", "running"],
      ["old2", "running"],
      ["old3", "paused"],
    ] as const) {
      insertRun.run(runId, status);
      insertCheckpoint.run(runId, 0, "running");
      insertCheckpoint.run(runId, 1, status);
    }
    db.prepare(`INSERT INTO ${t.calls} VALUES ('old1', 0, 0, 'c0'), ('old1', 0, 1, 'c1')`).run();
    db.close();

    const store = open(path);
    expect(await listed(store)).toEqual(["old1", "old2"]);
    expect(await store.latest("old3")).toMatchObject({ step: 1, status: "paused" });
    expect((await store.calls("old1")).map((call) => call.sealed)).toEqual(["c0", "c1"]);
    expect(await store.leaseOf("old1")).toBeUndefined();
    await store.recordCall("old1", 0, 2, "c2");
    await store.save("old1", 2, row("running", 1), { owner: "b", ms: MINUTE });
    expect(await store.leaseOf("old1")).toMatchObject({ owner: "b" });
    expect(await listed(store)).toEqual(["old2"]);

    const check = new Database(path, { readonly: true });
    expect(check.prepare(`SELECT value FROM ${t.meta} WHERE key = 'schema_version'`).pluck().get()).toBe(
      String(SCHEMA_VERSION),
    );
    check.close();
  });
});
