import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CheckpointRow, InvalidInput, type RunWrite } from "@durable/core/store";
import { BlackholeProxy, everyOperation, expectEachTimesOut, expectWorksAgain } from "@durable/test-utils/blackhole";
import { PrismaCheckpointStore } from "../src/index.js";
import { postgresAnswers, streamOperations, testDatabase } from "./databases.js";

const TIMEOUT = 2500;
// A busy CI machine may fire the timer late.
const MARGIN = 1000;
const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
/** A batch for run "r" at step 0: a record, the next checkpoint, a record. */
const batch = (): RunWrite[] => [
  { kind: "record", segment: 0, seq: 0, sealed: "d1.-.{}" },
  { kind: "save", step: 1, row: row() },
  { kind: "record", segment: 0, seq: 1, sealed: "d1.-.{}" },
];
const db = testDatabase();
const hasPostgres = await postgresAnswers();

describe("PrismaCheckpointStore operationTimeoutMs", () => {
  it.each([0, -1, 1.5, Number.NaN])("refuses %s with InvalidInput, and as migrateTimeoutMs too", (ms) => {
    expect(() => new PrismaCheckpointStore("postgresql://127.0.0.1/x", { operationTimeoutMs: ms })).toThrow(
      InvalidInput,
    );
    expect(() => new PrismaCheckpointStore("postgresql://127.0.0.1/x", { migrateTimeoutMs: ms })).toThrow(
      /migrateTimeoutMs must be a whole number of ms > 0/,
    );
  });
});

describe.runIf(hasPostgres)("PrismaCheckpointStore on PostgreSQL behind a connection that goes silent", () => {
  let proxy: BlackholeProxy;
  let url: string;
  beforeAll(async () => {
    await db.create();
    const direct = new URL(db.url);
    proxy = await BlackholeProxy.start(Number(direct.port || 5432), direct.hostname);
    direct.hostname = "127.0.0.1";
    direct.port = String(proxy.port);
    url = direct.toString();
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await db.drop();
  });

  it("fails every operation with StoreUnavailable within operationTimeoutMs, drops its connections, and works again once the network does", async () => {
    // Set up through a store with the default deadline: on a busy machine a migration may take longer than the short one.
    const setup = new PrismaCheckpointStore(url);
    await setup.migrate();
    await setup.save("r", 0, row());
    await setup.close();
    const store = new PrismaCheckpointStore(url, {
      operationTimeoutMs: TIMEOUT,
      migrateTimeoutMs: TIMEOUT,
      poolSize: 3,
    });
    await store.latest("r");
    proxy.silence();
    const operations = {
      ...everyOperation(store),
      ...streamOperations(store),
      commit: () => store.commit("r", batch()),
      listQueued: async () => {
        for await (const run of store.listQueued("q")) void run;
      },
      migrate: () => store.migrate(),
    };
    await expectEachTimesOut(
      operations,
      new RegExp(`did not answer .* within ${TIMEOUT} ms; whether the operation was applied is unknown`),
      TIMEOUT,
      MARGIN,
    );
    // No connection stays stuck: the store destroyed the silent ones.
    await expect.poll(() => proxy.connections, { timeout: 2000 }).toBe(0);
    proxy.restore();
    await expectWorksAgain(store);
    await store.close();
  }, 60_000);
});
