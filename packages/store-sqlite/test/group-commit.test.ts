import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  LeaseHeld,
  type RunWrite,
  StoreUnavailable,
} from "@durable/core/store";
import type { SQLiteCheckpointStore } from "../src/index.js";
import { newDatabasePath, storesOfThisFile } from "./conformance.js";
import { walCommits } from "./wal.js";

const open = storesOfThisFile();

const MINUTE = 60_000;
const row = (step = 0): CheckpointRow => ({
  status: "running",
  segment: 0,
  name: "f",
  kind: "flow",
  sealed: `d${step}`,
});
const ids = (n: number) => Array.from({ length: n }, (_, i) => `run-${i}`);

/** How many transactions `fn` committed to the store's file. */
async function commitsOf(store: SQLiteCheckpointStore, fn: () => Promise<unknown>): Promise<number> {
  const before = walCommits(store.path);
  await fn();
  return walCommits(store.path) - before;
}

/** Each promise's outcome: its value, or its error's class and message. */
async function outcomes(promises: Promise<unknown>[]) {
  return (await Promise.allSettled(promises)).map((result) =>
    result.status === "fulfilled" ? "ok" : { name: result.reason.name, message: result.reason.message },
  );
}

describe("group commit: the writes called in one turn", () => {
  it("of 16 runs share one transaction; awaited one after another they take 16", async () => {
    const store = open();
    expect(await commitsOf(store, () => Promise.all(ids(16).map((id) => store.save(id, 0, row()))))).toBe(1);
    expect(
      await commitsOf(store, async () => {
        for (const id of ids(16)) await store.recordCall(id, 0, 0, "c0");
      }),
    ).toBe(16);
    for (const id of ids(16)) expect((await store.calls(id)).length).toBe(1);
  });

  it("of every kind (save, recordCall, commit, renew, release, delete) share one transaction", async () => {
    const store = open();
    await Promise.all(["a", "b", "c"].map((id) => store.save(id, 0, row(), { owner: "w", ms: MINUTE })));
    const commits = await commitsOf(store, () =>
      Promise.all([
        store.save("a", 1, row(1), { owner: "w", ms: MINUTE }),
        store.recordCall("b", 0, 0, "c0"),
        store.commit("c", [{ kind: "record", segment: 0, seq: 0, sealed: "c0" }]),
        store.renew("a", 0, { owner: "w", ms: MINUTE }),
        store.release("b", 0, "w"),
        store.delete("c"),
      ]),
    );
    expect(commits).toBe(1);
    expect((await store.latest("a")).step).toBe(1);
    expect(await store.leaseOf("a")).toMatchObject({ owner: "w" });
    expect(await store.leaseOf("b")).toBeUndefined();
    await expect(store.latest("c")).rejects.toThrow(CheckpointNotFound);
  });

  it("apply in call order, each over the writes before it (one run's, and a delete between two starts)", async () => {
    const store = open();
    const done = await outcomes([
      store.save("r", 0, row()),
      store.recordCall("r", 0, 0, "c0"),
      store.commit("r", [
        { kind: "record", segment: 0, seq: 1, sealed: "c1" },
        { kind: "save", step: 1, row: row(1) },
      ]),
      store.recordCall("r", 0, 2, "c2"),
      store.save("s", 0, row()),
      store.delete("s"),
      store.save("s", 0, { ...row(), sealed: "again" }),
    ]);
    expect(done).toEqual(Array(7).fill("ok"));
    expect((await store.calls("r")).map((call) => call.sealed)).toEqual(["c0", "c1", "c2"]);
    expect((await store.latest("r")).step).toBe(1);
    expect((await store.latest("s")).sealed).toBe("again");
  });

  it("settle only once committed: a write that resolved is in the file for another connection", async () => {
    const store = open();
    const saved = store.save("r", 0, row());
    const other = new Database(store.path, { readonly: true });
    const count = () => other.prepare(`SELECT count(*) FROM ${store.tables.checkpoints}`).pluck().get();
    expect(count()).toBe(0);
    await saved;
    expect(count()).toBe(1);
    other.close();
  });
});

describe("group commit: an operation that fails", () => {
  it("refused by its rules rejects with the error it gives alone, and the others of the group land", async () => {
    const store = open();
    await store.save("held", 0, row(), { owner: "a", ms: MINUTE });
    const refused = [
      () => store.save("x", 0, row()), // the step the write before it took
      () => store.recordCall("nobody", 0, 0, "c0"),
      () => store.save("held", 1, { ...row(1), segment: 1 }, { owner: "b", ms: MINUTE }),
    ];
    const commits = await commitsOf(store, async () => {
      const done = await Promise.allSettled([
        store.save("x", 0, row()),
        ...refused.map((op) => op()),
        store.recordCall("x", 0, 0, "c0"),
      ]);
      expect(done.map((result) => result.status)).toEqual([
        "fulfilled",
        "rejected",
        "rejected",
        "rejected",
        "fulfilled",
      ]);
      const errors = done.map((result) => (result.status === "rejected" ? result.reason : undefined));
      expect(errors[1]).toBeInstanceOf(CheckpointConflict);
      expect(errors[2]).toBeInstanceOf(CheckpointNotFound);
      expect(errors[3]).toBeInstanceOf(LeaseHeld);
    });
    expect(commits).toBe(1);
    expect((await store.calls("x")).map((call) => call.sealed)).toEqual(["c0"]);
    expect(await store.leaseOf("held")).toMatchObject({ owner: "a" });
    expect((await store.latest("held")).step).toBe(0);

    // The same refused writes, in one group again and each alone: the same errors, word for word (a lease's
    // "ms from now" aside).
    const grouped = await outcomes(refused.map((op) => op()));
    const alone: unknown[] = [];
    for (const op of refused) alone.push(...(await outcomes([op()])));
    const fuzz = (list: unknown[]) => JSON.parse(JSON.stringify(list).replace(/\d+ ms from now/g, "N ms"));
    expect(fuzz(grouped)).toEqual(fuzz(alone));
  });

  it("whose statement fails is rolled back alone, its earlier writes too, and the others land", async () => {
    const store = open();
    await store.save("r", 0, row());
    await store.recordCall("r", 0, 0, "c0");
    // A record the head does not count, put there behind the store's back: the batch's insert of it fails.
    const db = new Database(store.path);
    db.prepare(`INSERT INTO ${store.tables.calls} VALUES ('r', 0, 2, 'planted')`).run();
    db.close();
    const batch: RunWrite[] = [
      { kind: "record", segment: 0, seq: 1, sealed: "c1" },
      { kind: "save", step: 1, row: row(1) },
      { kind: "record", segment: 0, seq: 2, sealed: "c2" },
    ];
    const [before, failing, after] = await Promise.allSettled([
      store.save("s", 0, row()),
      store.commit("r", batch),
      store.save("t", 0, row()),
    ]);
    expect(before?.status).toBe("fulfilled");
    expect(after?.status).toBe("fulfilled");
    expect(failing?.status === "rejected" && failing.reason).toBeInstanceOf(StoreUnavailable);
    expect((await store.latest("r")).step).toBe(0);
    expect((await store.calls("r")).map((call) => call.sealed)).toEqual(["c0", "planted"]);
    expect((await store.latest("s")).step).toBe(0);
    expect((await store.latest("t")).step).toBe(0);
  });
});

describe("group commit and close()", () => {
  it("commits the writes queued before it, and refuses those after", async () => {
    const path = newDatabasePath();
    const store = open(path);
    const queued = Promise.all(ids(4).map((id) => store.save(id, 0, row())));
    await store.close();
    await queued;
    await expect(store.save("late", 0, row())).rejects.toThrow(
      /^The store was closed while run "late" was using it \(save after close\(\)\)/,
    );
    const again = open(path);
    for (const id of ids(4)) expect((await again.latest(id)).step).toBe(0);
  });
});
