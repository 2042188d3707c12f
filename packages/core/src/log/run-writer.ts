import { MAX_BATCH_WRITES } from "../store/rules.js";
import type { CheckpointStore, RunWrite } from "../store/contract.js";
import type { StreamBatch } from "../store/contract.js";
import { instruments } from "../telemetry/metrics.js";

/** A batch of the run's stream (`appendStream`), in order with the run's other writes: alone in its commit. */
type StreamWrite = { readonly kind: "stream" } & StreamBatch;

/** What a run's writer writes: the store's batchable writes, and its stream's batches. */
type WriterWrite = RunWrite | StreamWrite;

interface Queued {
  readonly write: WriterWrite;
  readonly onLanded: (() => void) | undefined;
  readonly landed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function queued(write: WriterWrite, onLanded: (() => void) | undefined): Queued {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const landed = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  // A write that waits is awaited by no one until it lands: its failure reaches the next write instead.
  landed.catch(() => undefined);
  return { write, onLanded, landed, resolve, reject };
}

/**
 * One worker's writes to one run, in order: call records and checkpoints
 * queue, and reach the store in as few commits as the guarantees allow. A
 * write that must be durable before the worker goes on (a `started` record
 * before its tool runs, a claim, a paused or ended checkpoint) is committed
 * at once with everything queued before it: one batch when the store batches
 * (`commit`), else one write after another in order. A write that may wait
 * (a `done` record, a running checkpoint) goes with the next such commit; a
 * crash before it leaves what a crash before the write itself would (a call
 * in doubt, an earlier checkpoint). One commit at a time; after one fails,
 * every write fails with its error, since what landed is no longer known.
 */
export class RunWriter {
  readonly #store: CheckpointStore;
  readonly #runId: string;
  /** Queued writes cut into batches: at most one checkpoint and `MAX_BATCH_WRITES` writes each. */
  #batches: Queued[][] = [];
  #tail: Promise<void> = Promise.resolve();
  #failure: { readonly error: unknown; readonly refused: ReadonlySet<WriterWrite> } | undefined;
  /** A commit of what waits, at the end of this turn of the event loop, unless a durable write takes it first. */
  #soon: NodeJS.Immediate | undefined;

  constructor(store: CheckpointStore, runId: string) {
    this.#store = store;
    this.#runId = runId;
  }

  /**
   * Queues a write and gives the promise that it landed; `onLanded` runs
   * then, before any code awaiting a later write goes on. With `durable`, it
   * is committed now, after or with everything queued before it. Without, it
   * goes with the next durable write queued in this turn of the event loop
   * (node code going on to its next call, a superstep's checkpoint and the
   * next superstep's first call), or at the end of the turn: a call that
   * finished beside a slow one is not left in doubt while it runs.
   */
  write(write: WriterWrite, durable: boolean, onLanded?: () => void): Promise<void> {
    if (this.#failure !== undefined) {
      const failed = Promise.reject(this.#failure.error);
      failed.catch(() => undefined);
      return failed;
    }
    const entry = queued(write, onLanded);
    const last = this.#batches.at(-1);
    // A stream batch is appended alone, by the streams capability: it never rides in a commit.
    const full =
      last === undefined ||
      last.length >= MAX_BATCH_WRITES ||
      write.kind === "stream" ||
      last[0]?.write.kind === "stream" ||
      (write.kind === "save" && last.some((q) => q.write.kind === "save"));
    if (full) this.#batches.push([entry]);
    else last.push(entry);
    if (durable) void this.flush().catch(() => undefined);
    else this.#soon ??= setImmediate(() => void this.flush().catch(() => undefined));
    return entry.landed;
  }

  /** The error a commit of this run failed with, if one did: no write of the run lands after it. */
  get failure(): unknown {
    return this.#failure?.error;
  }

  /** Whether `write` was in the batch the store refused (not one queued behind it). */
  refused(write: WriterWrite): boolean {
    return this.#failure?.refused.has(write) === true;
  }

  /** Commits everything queued; resolves once it landed, rejects once any write of the run failed. */
  flush(): Promise<void> {
    if (this.#soon !== undefined) clearImmediate(this.#soon);
    this.#soon = undefined;
    const batches = this.#batches;
    this.#batches = [];
    const done = this.#tail.then(() => this.#commitAll(batches));
    this.#tail = done.catch(() => undefined);
    return done;
  }

  async #commitAll(batches: readonly Queued[][]): Promise<void> {
    // Nothing more lands after a failure, and a flush then says so even with nothing queued.
    if (this.#failure !== undefined && batches.length === 0) throw this.#failure.error;
    for (const [i, batch] of batches.entries()) {
      try {
        if (this.#failure !== undefined) throw this.#failure.error;
        await this.#commit(batch.map((q) => q.write));
      } catch (error) {
        this.#failure ??= { error, refused: new Set(batch.map((q) => q.write)) };
        for (const rest of [...batches.slice(i), ...this.#batches]) for (const q of rest) q.reject(error);
        this.#batches = [];
        throw error;
      }
      for (const q of batch) q.onLanded?.();
      for (const q of batch) q.resolve();
    }
  }

  /** Commits `writes`, timed (`durable.commit.duration`, by the store's class). */
  async #commit(writes: readonly WriterWrite[]): Promise<void> {
    const started = performance.now();
    try {
      await this.#commitWrites(writes);
    } finally {
      const seconds = (performance.now() - started) / 1000;
      instruments().commitDuration.record(seconds, { "durable.store": this.#store.constructor.name });
    }
  }

  async #commitWrites(writes: readonly WriterWrite[]): Promise<void> {
    const store = this.#store;
    const [first] = writes;
    if (first?.kind === "stream") {
      const { kind: _kind, ...batch } = first;
      // A writer makes stream writes only for a store with the capability (`streamStore`).
      return store.appendStream?.(this.#runId, batch);
    }
    if (writes.length > 1 && store.commit !== undefined) return store.commit(this.#runId, writes as RunWrite[]);
    for (const write of writes) {
      if (write.kind === "record") await store.recordCall(this.#runId, write.segment, write.seq, write.sealed);
      else if (write.kind === "save") await store.save(this.#runId, write.step, write.row, write.lease);
    }
  }
}
