import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { type CheckpointRow, InvalidInput } from "@durable/core/store";
import { expectEachTimesOut, writeOperations } from "@durable/test-utils/blackhole";
import { PrismaCheckpointStore } from "../src/index.js";
import { removeSqlite, sqliteUrl, streamOperations } from "./databases.js";

const BUSY = 300;
// A busy CI machine may be slow to return.
const MARGIN = 1500;
const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
afterAll(removeSqlite);

describe("PrismaCheckpointStore on a SQLite file another connection keeps locked", () => {
  it("takes no operationTimeoutMs: busyTimeoutMs bounds it", () => {
    expect(() => new PrismaCheckpointStore(sqliteUrl(), { operationTimeoutMs: 1000 })).toThrow(InvalidInput);
  });

  it("fails every write with StoreUnavailable within busyTimeoutMs, and writes work once the lock is gone", async () => {
    const url = sqliteUrl();
    const store = new PrismaCheckpointStore(url, { busyTimeoutMs: BUSY });
    await store.migrate();
    await store.save("r", 0, row());
    const holder = new Database(url.slice("file:".length));
    holder.exec("BEGIN IMMEDIATE");
    const commit = () =>
      store.commit("r", [
        { kind: "record", segment: 0, seq: 0, sealed: "d1.-.{}" },
        { kind: "save", step: 1, row: row() },
      ]);
    const { appendStream, dropStream } = streamOperations(store);
    await expectEachTimesOut(
      { ...writeOperations(store), commit, appendStream: appendStream!, dropStream: dropStream! },
      /locked|busy/i,
      BUSY,
      MARGIN,
    );
    holder.exec("ROLLBACK");
    holder.close();
    await store.save("r", 1, row());
    expect((await store.latest("r")).step).toBe(1);
    await store.close();
  });
});
