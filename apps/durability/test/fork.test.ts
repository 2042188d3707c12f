import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  CheckpointConflict,
  CheckpointNotFound,
  CheckpointStoreCorrupt,
  InvalidInput,
  LeaseHeld,
  RecoveryNeedsDecision,
} from "@durable/core";
import type { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { printedLines } from "@durable/test-utils/processes";
import { until } from "@durable/test-utils/waiting";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { effects, fiveSteps, KILLED_LEASE_MS, runner, twoCalls } from "./fork-flows.js";
import { sqliteFiles } from "./sqlite-files.js";

// Forks on a SQLite file: the original run is driven (and killed) in a worker process, forked and driven on in
// this one. The verdict comes from the tools' effects file and the rows as the store gives them back.

const CHILD = fileURLToPath(new URL("./fork-child.ts", import.meta.url));
const { files, open } = sqliteFiles("durable-fork-");
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** A worker process of `fork-child.ts`, with the lines it prints. */
function worker(mode: "five" | "kill", db: string, effectsFile: string) {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, mode, db, effectsFile], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return { child, line: printedLines(child).line };
}

/** Every row and record of a run as the store gives them back. */
async function stored(store: SQLiteCheckpointStore, runId: string) {
  return { rows: await store.history(runId), calls: await store.calls(runId) };
}

/** The five-step run `orig`, done by a worker process on a new file; the store of this process on it. */
async function doneRun() {
  const { db, effects: effectsFile } = files();
  await worker("five", db, effectsFile).line("done");
  const store = open(db);
  return { store, effectsFile, runner: runner(store, effectsFile), before: await stored(store, "orig") };
}

/** The checkpoints table of the store's file, through a connection of its own: past the store's API, as an attacker's. */
function onFile<T>(store: SQLiteCheckpointStore, use: (db: Database.Database, table: string) => T): T {
  const db = new Database(store.path, { timeout: 5000 });
  try {
    return use(db, store.tables.checkpoints);
  } finally {
    db.close();
  }
}

const readRow = (store: SQLiteCheckpointStore, runId: string, step: number): string =>
  onFile(store, (db, table) =>
    String(db.prepare(`SELECT sealed FROM ${table} WHERE run_id = ? AND step = ?`).pluck().get(runId, step)),
  );

const writeRow = (store: SQLiteCheckpointStore, runId: string, step: number, sealed: string): void =>
  void onFile(store, (db, table) =>
    db.prepare(`UPDATE ${table} SET sealed = ? WHERE run_id = ? AND step = ?`).run(sealed, runId, step),
  );

describe("a fork on a SQLite file", () => {
  it("of a five-step run from step 2, with a changed state and changed code: steps 0–2 replay, 3–5 run on the new code, it ends done with the change, and the original's rows and records are byte for byte as they were", {
    timeout: 60_000,
  }, async () => {
    const { store, effectsFile, runner: r, before } = await doneRun();
    const v2 = fiveSteps("v2");
    const note = (state: { note: string; count: number }) => ({ ...state, note: "changed" });
    await r.fork(v2, "orig", { fromStep: 2, runId: "fork", state: note, by: "dev@example.com" });
    expect(await r.recover(v2, "fork")).toMatchObject({ status: "done", state: { note: "changed", count: 5 } });
    expect(effects(effectsFile)).toEqual([
      ...["v1 s1 first", "v1 s2 first", "v1 s3 first", "v1 s4 first", "v1 s5 first"],
      ...["v2 s3 changed", "v2 s4 changed", "v2 s5 changed"],
    ]);
    expect(await stored(store, "orig")).toEqual(before);
    expect((await store.calls("fork")).slice(0, 4).map((call) => [call.runId, call.segment, call.seq])).toEqual([
      ["fork", 0, 0],
      ["fork", 0, 1],
      ["fork", 0, 2],
      ["fork", 0, 3],
    ]);
  });

  it.each([
    ["a fork's row of the fork step replaced by the original's", 2, "swap"],
    ["a fork's claim replaced by the original's row of its step", 3, "swap"],
    ["one byte of the fork's claim altered", 3, "byte"],
  ] as const)(
    "is CheckpointStoreCorrupt on recover with %s, and no tool runs",
    { timeout: 60_000 },
    async (_, step, how) => {
      const { store, effectsFile, runner: r } = await doneRun();
      const v2 = fiveSteps("v2");
      await r.fork(v2, "orig", { fromStep: 2, runId: "fork", by: "dev@example.com" });
      const own = readRow(store, "fork", step);
      writeRow(store, "fork", step, how === "swap" ? readRow(store, "orig", step) : own.replace('"fork"', '"forK"'));
      const ran = effects(effectsFile);
      await expect(r.recover(v2, "fork")).rejects.toBeInstanceOf(CheckpointStoreCorrupt);
      expect(effects(effectsFile)).toEqual(ran);
    },
  );

  it("refuses an ended row (InvalidInput) and a taken id (CheckpointConflict), writing nothing", {
    timeout: 60_000,
  }, async () => {
    const { store, runner: r, before } = await doneRun();
    const v2 = fiveSteps("v2");
    await expect(r.fork(v2, "orig", { fromStep: 5, runId: "f", by: "x" })).rejects.toBeInstanceOf(InvalidInput);
    await expect(store.latest("f")).rejects.toBeInstanceOf(CheckpointNotFound);
    await expect(r.fork(v2, "orig", { fromStep: 2, runId: "orig", by: "x" })).rejects.toBeInstanceOf(
      CheckpointConflict,
    );
    expect(await stored(store, "orig")).toEqual(before);
  });

  it("of a run SIGKILLed between two calls of a superstep, from its latest step: the finished call replays, the one in doubt stays in doubt", {
    timeout: 60_000,
  }, async () => {
    const { db, effects: effectsFile } = files();
    const killed = worker("kill", db, effectsFile);
    await killed.line("in b");
    killed.child.kill("SIGKILL");
    await new Promise((resolve) => killed.child.once("exit", resolve));
    expect(effects(effectsFile)).toEqual(["first", "a", "b"]);
    const store = open(db);
    const r = runner(store, effectsFile);
    const { step } = await store.latest("killed");
    // While the dead worker's lease is live, a fork from the latest step is refused: a live drive would still record.
    await expect(r.fork(twoCalls, "killed", { fromStep: step, runId: "fork", by: "dev@example.com" })).rejects.toThrow(
      LeaseHeld,
    );
    await expect(store.latest("fork")).rejects.toThrow(CheckpointNotFound);
    await until(async () => {
      const lease = await store.leaseOf("killed");
      return lease === undefined || lease.expiresAt <= lease.now;
    }, KILLED_LEASE_MS * 5);
    await r.fork(twoCalls, "killed", { fromStep: step, runId: "fork", by: "dev@example.com" });
    const error = await r.recover(twoCalls, "fork").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect((error as RecoveryNeedsDecision).calls.map((call) => call.tool)).toEqual(["b"]);
    expect(effects(effectsFile)).toEqual(["first", "a", "b"]);
  });
});
