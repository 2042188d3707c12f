import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Executor, InvalidInput, Sealer, sealCheckpoint } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { PrismaCheckpointStore } from "../src/index.js";
import { postgresAnswers, removeSqlite, sqliteUrl, testDatabase } from "./databases.js";
// The multi-process harness and the tickets flow are shared with the SQLite store's tests.
import { Child, executions } from "../../store-sqlite/test/processes.js";
import { KEY, tickets, ticketsRegistry } from "../../store-sqlite/test/tickets.js";

const OPEN = fileURLToPath(new URL("./open-store.ts", import.meta.url));
const MIGRATE = "../../store-prisma/test/migrate-once.ts";
const WORKER = "./worker.ts";
const sealer = Sealer.withKeys(KEY);
const db = testDatabase();
const hasPostgres = await postgresAnswers();
beforeAll(async () => hasPostgres && (await db.create()), 60_000);
afterAll(async () => {
  if (hasPostgres) await db.drop();
  removeSqlite();
});

/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets: Array<[string, () => string]> = [...(hasPostgres ? [["PostgreSQL", () => db.url] as [string, () => string]] : []), ["SQLite", sqliteUrl]];

/** The tables and columns the Prisma schema's models declare (by their @@map and @map names). */
function modelColumns(provider: string): Record<string, string[]> {
  const schema = readFileSync(fileURLToPath(new URL(`../prisma/${provider}.prisma`, import.meta.url)), "utf8");
  const tables: Record<string, string[]> = {};
  for (const [, body] of schema.matchAll(/model \w+ \{([^}]*)\}/g)) {
    const table = /@@map\("([^"]+)"\)/.exec(body!)![1]!;
    tables[table] = body!
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => /^\w+\s+\w+/.test(line) && !line.startsWith("@@"))
      .map((line) => /@map\("([^"]+)"\)/.exec(line)?.[1] ?? line.split(/\s+/)[0]!)
      .sort();
  }
  return tables;
}

describe.each(targets)("PrismaCheckpointStore on %s", (name, url) => {
  const provider = name === "PostgreSQL" ? "postgresql" : "sqlite";

  it("migrates a fresh database to exactly the tables and columns of the Prisma models", async () => {
    const target = url();
    const store = new PrismaCheckpointStore(target);
    expect(await store.migrate()).toEqual(["0001_init"]);
    expect(await store.migrate()).toEqual([]);
    await store.close();
    const found: Record<string, string[]> = {};
    if (provider === "sqlite") {
      const file = new Database(target.slice(5));
      for (const table of ["durable_runs", "durable_checkpoints", "durable_calls"]) {
        found[table] = (file.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>).map((c) => c.name).sort();
      }
      file.close();
    } else {
      const client = new pg.Client({ connectionString: target });
      await client.connect();
      const { rows } = await client.query<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN ('durable_runs', 'durable_checkpoints', 'durable_calls')",
      );
      for (const row of rows) (found[row.table_name] ??= []).push(row.column_name);
      for (const table of Object.keys(found)) found[table]!.sort();
      await client.end();
    }
    expect(found).toEqual(modelColumns(provider));
  });

  it("four processes migrating one fresh database at once all succeed, and the schema is applied once", async () => {
    const target = provider === "sqlite" ? url() : await freshDatabase();
    const children = Array.from({ length: 4 }, () => new Child(MIGRATE, [target]));
    const exits = await Promise.all(children.map((c) => c.exited()));
    expect(exits.map((e) => e.code), children.map((c) => c.stderr).join("\n")).toEqual([0, 0, 0, 0]);
    const applied = children.map((c) => c.lines.find((l) => l.startsWith("applied"))).sort();
    expect(applied).toEqual(['applied ["0001_init"]', "applied []", "applied []", "applied []"]);
  }, 120_000);

  it("a pool of 2 connections with 50 runs saving at once neither deadlocks nor times out", async () => {
    const store = new PrismaCheckpointStore(url(), { poolSize: 2, tablePrefix: "pool_" });
    await store.migrate();
    const row = (runId: string, step: number) =>
      sealCheckpoint(sealer, { runId, step, status: "running", segment: 0, flow: "pool", kind: "flow", identity: {}, calls: 0, data: { step } });
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        for (let step = 0; step < 5; step++) await store.save(`pool-${i}`, step, row(`pool-${i}`, step));
      }),
    );
    for (let i = 0; i < 50; i++) expect((await store.latest(`pool-${i}`)).step).toBe(4);
    await store.close();
  }, 120_000);

  it("8 processes recovering one run at once, 50 times: exactly one winner each time, no tool ran twice", async () => {
    const target = url();
    const prefix = "race_";
    const setupStore = new StopsBeforeCharge(target, { tablePrefix: prefix });
    await setupStore.migrate();
    const effects = join(tmpdir(), `durable-prisma-race-${name}-${Date.now()}.effects`);
    const workers = Array.from({ length: 8 }, () => new Child(WORKER, [OPEN, `${target} ${prefix}`, "serve", effects]));
    try {
      await Promise.all(workers.map((w) => w.waitFor((l) => l === "ready")));
      const setup = new FlowRunner(new Executor(ticketsRegistry(effects)), { checkpoints: setupStore, checkpointKey: KEY });
      for (let trial = 0; trial < 50; trial++) {
        const runId = `race-${trial}`;
        void setup.run(tickets, { show: "Hamlet", seats: 2 }, { runId });
        await until(async () => (await setupStore.latest(runId).catch(() => undefined))?.step === 1);
        workers.forEach((w) => w.send(`race ${runId}`));
        await Promise.all(workers.map((w) => w.waitFor((l) => l === `at-claim ${runId}`)));
        workers.forEach((w) => w.send(`go ${runId}`));
        const answers = await Promise.all(workers.map((w) => w.waitFor((l) => l.split(" ")[1] === runId && !l.startsWith("at-claim"))));
        expect(answers.filter((a) => a.startsWith("won")), answers.join("; ")).toHaveLength(1);
        expect(answers.filter((a) => a.startsWith("conflict"))).toHaveLength(7);
      }
      const counts = executions(effects);
      expect(counts.size).toBe(150);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    } finally {
      workers.forEach((w) => w.kill());
    }
  }, 300_000);

  it("a worker killed with SIGKILL inside email_tickets: the next process finds it in doubt, then completes it", async () => {
    const target = url();
    const store = new PrismaCheckpointStore(target, { tablePrefix: "crash_" });
    await store.migrate();
    await store.close();
    const effects = join(tmpdir(), `durable-prisma-crash-${name}-${Date.now()}.effects`);
    const crashing = new Child(WORKER, [OPEN, `${target} crash_`, "crash", effects, "order-7"]);
    await crashing.waitFor((l) => l === "inside email_tickets");
    crashing.kill();
    expect((await crashing.exited()).signal).toBe("SIGKILL");
    const second = new Child(WORKER, [OPEN, `${target} crash_`, "serve", effects]);
    try {
      await second.waitFor((l) => l === "ready");
      second.send("recover order-7");
      expect(await second.waitFor((l) => l.includes("order-7"))).toBe("in-doubt order-7 email_tickets");
      second.send("recover order-7 rerun");
      expect(await second.waitFor((l) => l.startsWith("won order-7"))).toBe("won order-7 done");
    } finally {
      second.kill();
    }
    const counts = executions(effects);
    expect([counts.get("order-7 hold_seats"), counts.get("order-7 charge_card"), counts.get("order-7 email_tickets")]).toEqual([1, 1, 2]);
  }, 120_000);
});

describe("bad input", () => {
  it("a URL of another database, and a table prefix that is not a plain name, are InvalidInput", () => {
    expect(() => new PrismaCheckpointStore("mysql://x")).toThrow(InvalidInput);
    expect(() => new PrismaCheckpointStore(sqliteUrl(), { tablePrefix: "a; DROP" })).toThrow(InvalidInput);
    expect(() => new PrismaCheckpointStore(sqliteUrl(), { schema: "tenant" })).toThrow(/schema is for PostgreSQL/);
  });
});

/** A fresh PostgreSQL database for one test, dropped with the file's own. */
async function freshDatabase(): Promise<string> {
  const extra = testDatabase();
  await extra.create();
  afterAll(() => extra.drop());
  return extra.url;
}

/** A store through which a worker stops for good just before charge_card's started record. */
class StopsBeforeCharge extends PrismaCheckpointStore {
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (sealed.includes('"tool":"charge_card"')) return new Promise(() => {});
    return super.recordCall(runId, segment, seq, sealed);
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}
