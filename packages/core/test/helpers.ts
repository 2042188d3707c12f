import { MemoryCheckpointStore } from "../src/index.js";
import type { CheckpointStore, StoredCall, StoredCheckpoint } from "../src/store.js";
import {
  CallScope,
  type CallRecord,
  DurableRun,
  freshPlan,
  readCallLog,
  type ReplayPlan,
  Sealer,
} from "../src/runner.js";
import { Executor, type ToolRegistry } from "../src/index.js";

export const KEY = "k".repeat(32);
export const OLD_KEY = "o".repeat(32);
export const sealer: Sealer = Sealer.withKeys(KEY);

export { MemoryCheckpointStore };

/** Starts a flow run on a fresh memory store. */
export async function startRun(store: CheckpointStore = new MemoryCheckpointStore(), runId = "run-1") {
  const started = await DurableRun.start({
    store,
    sealer,
    runId,
    name: "tickets",
    kind: "flow",
    identity: { user: "ada", thread: "t-1" },
    data: { state: { show: "Hamlet", seats: 2 } },
  });
  return { store, ...started };
}

/**
 * A store whose reads pass through `edit` functions: how the tests change,
 * drop or reorder stored rows as an attacker with write access to the
 * database would, without the key.
 */
export class TamperedStore extends MemoryCheckpointStore {
  editCheckpoint: (row: StoredCheckpoint) => StoredCheckpoint = (row) => row;
  editCalls: (rows: StoredCall[]) => StoredCall[] = (rows) => rows;

  override async latest(runId: string): Promise<StoredCheckpoint> {
    return this.editCheckpoint(await super.latest(runId));
  }

  override async calls(runId: string): Promise<StoredCall[]> {
    return this.editCalls(await super.calls(runId));
  }
}

/** Replaces the first occurrence of `from` inside a sealed envelope's body, leaving the signature as it was. */
export function editSealed(sealed: string, from: string, to: string): string {
  const at = sealed.indexOf(from, sealed.indexOf(".", 3) + 1);
  if (at < 0) throw new Error(`${from} is not in ${sealed}`);
  return sealed.slice(0, at) + to + sealed.slice(at + from.length);
}

/** Every item of an async iterable (Array.fromAsync needs Node 22). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check` holds, polling every 5 ms; throws after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (await check()) return;
    await sleep(5);
  }
  throw new Error("timed out waiting");
}

/** The call scope of a flow's round on `run`. */
export function scopeFor(run: DurableRun, plan: ReplayPlan = freshPlan(1), extra: Partial<CallScope["init"]> = {}) {
  return new CallScope({ kind: "flow", log: run.log, plan, identity: run.identity, ...extra });
}

/**
 * Calls `charge` of `registry` in round 1 of `run` (run-1), and gives the run up (as a stopping worker does)
 * once the log holds `records` records and `afterMs` more passed: a wait between attempts is then under way.
 * Returns the log as the give-up left it.
 */
export async function giveUpDuringWait(
  store: CheckpointStore,
  run: DurableRun,
  registry: ToolRegistry,
  records: number,
  afterMs: number,
): Promise<CallRecord[]> {
  const giveUp = new AbortController();
  const first = new Executor(registry).call(scopeFor(run, freshPlan(1), { signal: giveUp.signal }), "p", "charge", {});
  void first.catch(() => undefined);
  await until(async () => (await store.calls("run-1")).length === records);
  await sleep(afterMs);
  giveUp.abort(new Error("shutting down"));
  await first.then(
    () => {
      throw new Error("the call finished though its run was given up");
    },
    (error: unknown) => {
      if (!(error instanceof Error && error.message === "shutting down")) throw error;
    },
  );
  return readCallLog(store, sealer, "run-1", []);
}
