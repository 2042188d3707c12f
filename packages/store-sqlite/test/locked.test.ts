import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckpointRow } from "@durable/core/store";
import { expectEachTimesOut, writeOperations } from "@durable/test-utils/blackhole";
import { SQLiteCheckpointStore } from "../src/index.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";

const BUSY = 300;
// A busy CI machine may be slow to return.
const MARGIN = 1000;
const row = (): CheckpointRow => ({ status: "running", segment: 0, flow: "f", kind: "flow", sealed: "d1.-.{}" });
const path = newDatabasePath();
afterAll(() => removeDatabase(path));

describe("SQLiteCheckpointStore on a file another connection keeps locked", () => {
  it("fails every write with StoreUnavailable within busyTimeoutMs, reads go on, and writes work once the lock is gone", async () => {
    const store = new SQLiteCheckpointStore(path, { busyTimeoutMs: BUSY });
    await store.save("r", 0, row());
    const holder = new Database(path);
    holder.exec("BEGIN IMMEDIATE");
    const commit = () => store.commit("r", [{ kind: "save", step: 1, row: row() }]);
    await expectEachTimesOut({ ...writeOperations(store), commit }, /locked/, BUSY, MARGIN);
    // WAL: readers never wait on the writer.
    expect((await store.latest("r")).step).toBe(0);
    expect(await store.calls("r")).toEqual([]);
    holder.exec("ROLLBACK");
    holder.close();
    await store.save("r", 1, row());
    expect((await store.latest("r")).step).toBe(1);
    await store.close();
  });
});
