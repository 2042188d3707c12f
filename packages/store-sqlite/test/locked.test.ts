import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckpointRow } from "@durable/core/store";
import { expectEachTimesOut, writeOperations } from "@durable/test-utils/blackhole";
import { SQLiteCheckpointStore } from "../src/index.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";

const BUSY = 300;
// A busy CI machine may be slow to return.
const MARGIN = 1000;
const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
const path = newDatabasePath();
const groupPath = newDatabasePath();
afterAll(() => [path, groupPath].forEach(removeDatabase));

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

  it("fails every operation of a group (writes of many runs in one turn) with StoreUnavailable within busyTimeoutMs", async () => {
    const store = new SQLiteCheckpointStore(groupPath, { busyTimeoutMs: BUSY });
    await store.save("r", 0, row());
    const holder = new Database(groupPath);
    holder.exec("BEGIN IMMEDIATE");
    const runs = Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`start of run ${i}`, () => store.save(`group-${i}`, 0, row())]),
    );
    const commit = () => store.commit("r", [{ kind: "save", step: 1, row: row() }]);
    // Started together, they share one group: one wait on the lock, not one after another.
    await expectEachTimesOut({ ...writeOperations(store), commit, ...runs }, /locked/, BUSY, MARGIN, { atOnce: true });
    holder.exec("ROLLBACK");
    holder.close();
    expect((await store.latest("r")).step).toBe(0);
    await expect(store.latest("group-0")).rejects.toThrow(/group-0/);
    await store.close();
  });
});
