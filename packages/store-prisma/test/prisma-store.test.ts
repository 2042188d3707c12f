import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { InvalidInput, StoreNotReady, StoreUnavailable } from "@durable/core/store";
import { sealCheckpoint, Sealer } from "@durable/core/runner";
import { connect } from "../src/connection.js";
import { PrismaCheckpointStore } from "../src/index.js";
import { runScript } from "@durable/test-utils/processes";
import { everyOperation } from "@durable/test-utils/blackhole";
import { everyDatabase, sqliteUrl, streamOperations, testDatabase } from "./databases.js";

const MIGRATE = new URL("./migrate-once.ts", import.meta.url);
const sealer = Sealer.withKeys("prisma-tests-key-0123456789abcdef-xyz");
/** Every database the tests run on: PostgreSQL (when it answers) and a SQLite file. */
const targets = await everyDatabase();

/** The tables and columns the shipped models declare (by their @@map and @map names). */
function modelColumns(): Record<string, string[]> {
  const schema = readFileSync(fileURLToPath(new URL("../prisma/models.prisma", import.meta.url)), "utf8");
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
    expect(await store.migrate()).toEqual([
      "0001_init",
      "0002_leases",
      "0003_inspect",
      "0004_decisions",
      "0005_events",
      "0006_queues",
      "0007_streams",
    ]);
    expect(await store.migrate()).toEqual([]);
    await store.close();
    const found: Record<string, string[]> = {};
    if (provider === "sqlite") {
      const file = new Database(target.slice(5));
      for (const table of [
        "durable_runs",
        "durable_checkpoints",
        "durable_calls",
        "durable_events",
        "durable_queue_starts",
        "durable_streams",
      ]) {
        found[table] = (file.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>)
          .map((c) => c.name)
          .sort();
      }
      file.close();
    } else {
      const client = new pg.Client({ connectionString: target });
      await client.connect();
      const { rows } = await client.query<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN ('durable_runs', 'durable_checkpoints', 'durable_calls', 'durable_events', 'durable_queue_starts', 'durable_streams')",
      );
      for (const row of rows) found[row.table_name] = [...(found[row.table_name] ?? []), row.column_name].sort();
      await client.end();
    }
    expect(found).toEqual(modelColumns());
  });

  it("four processes migrating one fresh database at once all succeed, and the schema is applied once", async () => {
    const target = provider === "sqlite" ? url() : await freshDatabase();
    const runs = await Promise.all(Array.from({ length: 4 }, () => runScript(MIGRATE, [target])));
    expect(
      runs.map((r) => r.code),
      runs.map((r) => r.stderr).join("\n"),
    ).toEqual([0, 0, 0, 0]);
    const applied = runs.map((r) => r.stdout.find((l) => l.startsWith("applied"))).sort();
    expect(applied).toEqual([
      'applied ["0001_init","0002_leases","0003_inspect","0004_decisions","0005_events","0006_queues","0007_streams"]',
      "applied []",
      "applied []",
      "applied []",
    ]);
  }, 120_000);

  it("a pool of 2 connections with 50 runs saving at once neither deadlocks nor times out", async () => {
    const store = new PrismaCheckpointStore(url(), { poolSize: 2, tablePrefix: "pool_" });
    await store.migrate();
    const row = (runId: string, step: number) =>
      sealCheckpoint(sealer, {
        runId,
        step,
        status: "running",
        segment: 0,
        name: "pool",
        kind: "flow",
        identity: {},
        calls: [0],
        data: { step },
      });
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        for (let step = 0; step < 5; step++) await store.save(`pool-${i}`, step, row(`pool-${i}`, step));
      }),
    );
    for (let i = 0; i < 50; i++) expect((await store.latest(`pool-${i}`)).step).toBe(4);
    await store.close();
  }, 120_000);

  it("a store whose tables were never made says to migrate, on one line, and not to wait for the database", async () => {
    const store = new PrismaCheckpointStore(url(), { tablePrefix: "never_" });
    const commit = () => store.commit("r", [{ kind: "record", segment: 0, seq: 0, sealed: "d1.-.{}" }]);
    const listQueued = async () => {
      for await (const run of store.listQueued("q")) void run;
    };
    const attempts = Object.entries({ ...everyOperation(store), commit, listQueued, ...streamOperations(store) });
    for (const [what, attempt] of attempts) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, what).toBeInstanceOf(StoreNotReady);
      expect(error, what).not.toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message, what).toMatch(
        /^Table \S*never_\w+ does not exist: .*Run `await store\.migrate\(\)` \(or `durable-prisma migrate <url>`\)/,
      );
      expect((error as Error).message, what).not.toContain("\n");
    }
    await store.close();
  });

  it("a store closed while a run still uses it says so, naming the run, not in the driver's words", async () => {
    const store = new PrismaCheckpointStore(url(), { tablePrefix: `closed_${provider}_` });
    await store.migrate();
    await expect(store.latest("order-7")).rejects.toThrow(/No checkpoint/);
    await store.close();
    for (const use of [
      () => store.latest("order-7"),
      () => store.recordCall("order-7", 0, 0, "d1.-.{}"),
      () => store.release("order-7", 0, "me"),
      ...Object.values(streamOperations(store, "order-7")),
    ]) {
      const error: unknown = await use().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message).toMatch(
        /^The store was closed while run "order-7" was using it \(\w+ after close\(\)\): stop what uses a store \(await worker\.stop\(\)\) before closing it\.$/,
      );
    }
  });
});

describe("bad input", () => {
  it("a misspelled option is InvalidInput naming the closest one", () => {
    expect(() => new PrismaCheckpointStore(sqliteUrl(), { tablePrefx: "t_" } as never)).toThrow(
      new InvalidInput("PrismaCheckpointStore: unknown option `tablePrefx`; did you mean `tablePrefix`?"),
    );
    expect(() => PrismaCheckpointStore.fromClient({} as never, { provider: "sqlite", poolSize: 2 } as never)).toThrow(
      /^PrismaCheckpointStore\.fromClient: unknown option `poolSize`/,
    );
  });

  it("SQLite: synchronous FULL by default, NORMAL when asked, as the connection reports it; anything else is InvalidInput", async () => {
    const level = async (options: { synchronous?: "full" | "normal" }) => {
      const connection = connect(sqliteUrl(), options);
      try {
        const [row] = await (await connection.client()).$queryRawUnsafe<Array<{ synchronous: number | bigint }>>(
          "PRAGMA synchronous",
        );
        return Number(row!.synchronous);
      } finally {
        await connection.release();
      }
    };
    expect(await level({})).toBe(2);
    expect(await level({ synchronous: "normal" })).toBe(1);
    expect(() => connect(sqliteUrl(), { synchronous: "off" as "full" })).toThrow(InvalidInput);
    expect(() => connect("postgresql://127.0.0.1/x", { synchronous: "full" })).toThrow(/synchronous is for SQLite/);
  });

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
