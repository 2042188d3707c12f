import { setImmediate as nextTurn } from "node:timers/promises";
import type { MemoryData } from "@durable/core/internal";
import { MemoryCheckpointStore, StoreUnavailable } from "@durable/core";
import {
  type CheckpointRow,
  type CheckpointStore,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  recordRefusal,
  type RunWrite,
  type StoredCall,
  type StoredCheckpoint,
} from "@durable/core/store";
import type { ConformanceInitializer } from "@durable/conformance";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import sqlite, { newDatabasePath, removeDatabase } from "./sqlite.js";

/**
 * Stores that break the promise "when recordCall resolves, the record is
 * durable", or its atomicity. Each is a correct store (SQLite, memory) with
 * one realistic bug; the kit's own tests show its groups catch each.
 */

const ACK_AHEAD_MS = 25;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A SQLite store with a write queue in front: what a worker writes is applied
 * `ACK_AHEAD_MS` later, and reads wait for the queue, so one process always
 * sees its own writes. Only a process that dies in between loses them.
 */
abstract class AckedAhead implements CheckpointStore {
  readonly inner: SQLiteCheckpointStore;
  protected queue: Promise<void> = Promise.resolve();
  constructor(path: string) {
    this.inner = new SQLiteCheckpointStore(path);
  }
  get path(): string {
    return this.inner.path;
  }
  abstract recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void>;
  /** Applies `write` once the queue before it is applied and `ACK_AHEAD_MS` have passed. */
  protected later(write: () => Promise<void>): void {
    this.queue = this.queue
      .then(() => delay(ACK_AHEAD_MS))
      .then(write)
      .catch(() => {});
  }
  async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    await this.queue;
    return this.inner.save(runId, step, row, lease);
  }
  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    await this.queue;
    return this.inner.renew(runId, segment, terms);
  }
  async release(runId: string, segment: number, owner: string): Promise<void> {
    await this.queue;
    return this.inner.release(runId, segment, owner);
  }
  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    await this.queue;
    return this.inner.leaseOf(runId);
  }
  async latest(runId: string): Promise<StoredCheckpoint> {
    await this.queue;
    return this.inner.latest(runId);
  }
  async *listUnfinished(flow: string, options?: ListOptions): AsyncIterable<string> {
    await this.queue;
    yield* this.inner.listUnfinished(flow, options);
  }
  async delete(runId: string): Promise<void> {
    await this.queue;
    return this.inner.delete(runId);
  }
  async calls(runId: string): Promise<StoredCall[]> {
    await this.queue;
    return this.inner.calls(runId);
  }
  async close(): Promise<void> {
    await this.queue;
    return this.inner.close();
  }
}

/** Write-behind: `recordCall` resolves at once, unchecked; the write follows 25 ms later. */
export class WriteBehindStore extends AckedAhead {
  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    this.later(() => this.inner.recordCall(runId, segment, seq, sealed));
  }
}

/** Deferred commit: `recordCall` checks the record against what is stored and resolves; it commits 25 ms later. */
export class DeferredCommitStore extends AckedAhead {
  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    await this.queue;
    const head = await this.inner.latest(runId).catch(() => undefined);
    const next = (await this.inner.calls(runId)).filter((c) => c.segment === segment).length;
    const refused = recordRefusal(runId, segment, seq, head, next);
    if (refused !== undefined) throw refused;
    this.later(() => this.inner.recordCall(runId, segment, seq, sealed));
  }
}

/**
 * Checks the record against the run's head, then writes it a turn of the
 * event loop later (as a check and an insert in two round trips would): a
 * claim that lands in between does not fence the record.
 */
class CheckOutsideTransactionStore extends MemoryCheckpointStore {
  readonly #data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.#data = data;
  }
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const entry = this.#data.get(runId);
    const next = entry?.counts.get(segment) ?? 0;
    const refused = recordRefusal(runId, segment, seq, entry?.checkpoints.at(-1), next);
    if (refused !== undefined) throw refused;
    await nextTurn();
    entry!.calls.push({ runId, segment, seq, sealed });
    entry!.counts.set(segment, next + 1);
  }
}

/**
 * A correct SQLite store whose connection drops once per run in recovery:
 * after a takeover claim, the first commit that holds a record numbered 2 or
 * more in the claimed segment is written, and then fails with
 * StoreUnavailable, as a reply lost on the way back would. The record may be
 * the `done` of a call that ran, which the next try then finds in doubt.
 */
export class UnavailableOnceStore extends SQLiteCheckpointStore {
  /** Each run's segment claimed by a takeover in this process, until its commit failed once. */
  readonly #claimed = new Map<string, number>();
  readonly #failed = new Set<string>();
  override async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    await super.commit(runId, writes);
    for (const w of writes) if (w.kind === "save" && w.lease?.takeOver === true) this.#claimed.set(runId, w.step);
    const segment = this.#claimed.get(runId);
    const late = writes.some((w) => w.kind === "record" && w.segment === segment && w.seq >= 2);
    if (!late || this.#failed.has(runId)) return;
    this.#failed.add(runId);
    throw new StoreUnavailable("the connection dropped before the commit's reply (test)");
  }
}

const OPENER = new URL("./open-broken-sqlite.ts", import.meta.url).href;

function brokenSqlite<S extends { readonly path: string; close(): Promise<void> } & CheckpointStore>(
  name: string,
  kind: string,
  open: (path: string) => S,
): ConformanceInitializer<S> {
  return {
    name,
    createStore: () => open(newDatabasePath()),
    async destroyStore(store) {
      await store.close();
      removeDatabase(store.path);
    },
    capabilities: { multiProcess: { opener: OPENER, handle: (store) => `${kind}:${store.path}` } },
  };
}

export const writeBehind = brokenSqlite(
  "acknowledges recordCall before writing it",
  "write-behind",
  (path) => new WriteBehindStore(path),
);
export const deferredCommit = brokenSqlite(
  "commits recordCall 25 ms after resolving",
  "deferred-commit",
  (path) => new DeferredCommitStore(path),
);
export const unavailableOnce = brokenSqlite(
  "fails a commit of each run's recovery once with StoreUnavailable, after writing it",
  "unavailable-once",
  (path) => new UnavailableOnceStore(path),
);
export const checkOutsideTransaction: ConformanceInitializer = {
  name: "checks recordCall's segment outside its transaction",
  createStore: () => new CheckOutsideTransactionStore(),
};
export { sqlite };
