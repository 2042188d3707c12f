import { randomUUID } from "node:crypto";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { InvalidInput, StoreNotReady } from "@durable/core/store";
import { sealCheckpoint, Sealer } from "@durable/core/runner";
import { PrismaCheckpointStore } from "../src/index.js";
// The package's own generated clients stand in for a user's: generated from a schema with the shipped models.
import { PrismaClient as PostgresClient } from "../src/generated/postgresql/client.js";
import { PrismaClient as SqliteClient } from "../src/generated/sqlite/client.js";
import { postgresAnswers, removeSqlite, sqliteUrl, testDatabase } from "./databases.js";

const sealer = Sealer.withKeys("prisma-tests-key-0123456789abcdef-xyz");
const db = testDatabase();
const hasPostgres = await postgresAnswers();
const sqliteFile = sqliteUrl().slice("file:".length);

/** The user's clients, one per database, made before the stores and disconnected by the user after them. */
const clients: { postgresql?: PostgresClient; sqlite?: SqliteClient } = {};
beforeAll(async () => {
  if (hasPostgres) {
    await db.create();
    clients.postgresql = new PostgresClient({ adapter: new PrismaPg({ connectionString: db.url }) });
  }
  clients.sqlite = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: sqliteFile, timeout: 5000 }) });
}, 60_000);
afterAll(async () => {
  await clients.postgresql?.$disconnect();
  await clients.sqlite?.$disconnect();
  if (hasPostgres) await db.drop();
  removeSqlite();
});

const targets = [...(hasPostgres ? (["postgresql"] as const) : []), "sqlite"] as const;

/** A store on the user's client of `provider`, on tables of a prefix of its own, migrated. */
async function storeOn(provider: (typeof targets)[number]): Promise<PrismaCheckpointStore> {
  const store = PrismaCheckpointStore.fromClient(clients[provider]!, {
    provider,
    tablePrefix: `c${randomUUID().slice(0, 8)}_`,
  });
  await store.migrate();
  return store;
}

describe.each(targets)("PrismaCheckpointStore.fromClient on %s", (provider) => {
  it("runs on the user's PrismaClient, and close() leaves that client connected", async () => {
    const store = await storeOn(provider);
    expect(store.provider).toBe(provider);
    const row = sealCheckpoint(sealer, {
      runId: "r1",
      step: 0,
      status: "running",
      segment: 0,
      name: "f",
      kind: "flow",
      identity: {},
      calls: [0],
      data: {},
    });
    await store.save("r1", 0, row);
    expect((await store.latest("r1")).step).toBe(0);
    await store.close();
    const client = clients[provider]!;
    expect(await client.$queryRawUnsafe<Array<{ one: number | bigint }>>("SELECT 1 AS one")).toEqual([
      { one: expect.anything() },
    ]);
    const again = PrismaCheckpointStore.fromClient(client, {
      provider,
      tablePrefix: store.tables.runs.match(/"(c\w+_)runs"/)![1]!,
    });
    expect((await again.latest("r1")).step).toBe(0);
  });

  runConformance(
    { name: `prisma fromClient, ${provider}`, createStore: () => storeOn(provider) },
    { groups: ["save", "read", "call-log", "batch", "isolation", "stream"] },
  );
});

describe.each(targets)("fromClient on %s without the store's tables", (provider) => {
  it("says to migrate with the store or with the user's own Prisma migrations, on one line", async () => {
    const store = PrismaCheckpointStore.fromClient(clients[provider]!, { provider, tablePrefix: "never_" });
    const error = await store.latest("r").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreNotReady);
    expect((error as Error).message).toMatch(
      /^Table \S*never_checkpoints does not exist: .*`await store\.migrate\(\)`.*, or apply your own Prisma migrations with the store's models \(prisma\/models\.prisma of @durable\/store-prisma\)\.$/,
    );
    expect((error as Error).message).not.toContain("\n");
  });
});

describe("fromClient bad input", () => {
  it("a provider the store does not speak, and a schema for SQLite, are InvalidInput", () => {
    const client = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: ":memory:" }) });
    expect(() => PrismaCheckpointStore.fromClient(client, { provider: "mysql" as "sqlite" })).toThrow(InvalidInput);
    expect(() => PrismaCheckpointStore.fromClient(client, { provider: "sqlite", schema: "tenant" })).toThrow(
      /schema is for PostgreSQL/,
    );
  });
});
