import type {
  QueuedRun,
  CallPosition,
  CheckpointRow,
  CheckpointStore,
  Lease,
  LeaseClaim,
  LeaseTerms,
  LeaseView,
  ListOptions,
  StoredCall,
  StoredEvent,
  StoredCheckpoint,
  StoredStreamBatch,
  StreamBatch,
} from "@durable/core/store";

/** A promise that never settles: what a worker that died inside an operation leaves behind. */
/** A listing that never gives its first item: what a dead worker's listing does. */
async function* hung<T>(): AsyncIterable<T> {
  await forever();
  yield* [] as T[];
}

export function forever(): Promise<never> {
  return new Promise(() => {});
}

/** Where a simulated worker death happens around a store operation. */
export type CrashPoint =
  | { op: "recordCall"; kind: string; tool: string; when: "before" | "after" }
  | { op: "save"; step: number; when: "before" | "after" };

/**
 * A store through which a worker dies: at the crash point it stops, writing
 * nothing more (every later operation of this worker hangs: it renews and
 * releases no lease either). The store under it is what the next worker opens.
 * Every argument reaches the store under it as given, leases included. The
 * lease the worker held runs out as it dies (a real one runs out after its
 * length): the next worker claims the run without waiting or taking it over.
 */
export class DyingStore implements CheckpointStore {
  dead = false;
  /** The lease the worker's last running save took: what runs out as it dies. */
  #held: { readonly runId: string; readonly segment: number; readonly owner: string } | undefined;
  /** The store under it reads its history, so a runner on either writes and reads the same chain. */
  readonly history?: (runId: string, from?: number) => Promise<StoredCheckpoint[]>;
  /** The store under it keeps its queues; a dead worker lists none. */
  readonly listQueued?: (queue: string) => AsyncIterable<QueuedRun>;
  constructor(
    readonly inner: CheckpointStore,
    readonly crash: CrashPoint | undefined,
  ) {
    const listQueued = inner.listQueued?.bind(inner);
    if (listQueued !== undefined) this.listQueued = (queue) => (this.dead ? hung<QueuedRun>() : listQueued(queue));
    const history = inner.history?.bind(inner);
    if (history !== undefined)
      this.history = async (runId, from) => {
        if (this.dead) await forever();
        return history(runId, from);
      };
  }

  async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    const hit = this.crash?.op === "save" && this.crash.step === step;
    await this.#gate(hit, async () => {
      await this.inner.save(runId, step, row, lease);
      const holds = row.status === "running" && lease !== undefined && lease.ms > 0;
      this.#held = holds ? { runId, segment: row.segment, owner: lease.owner } : undefined;
    });
  }
  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    if (this.dead) await forever();
    return this.inner.renew(runId, segment, terms);
  }
  async release(runId: string, segment: number, owner: string): Promise<void> {
    if (this.dead) await forever();
    return this.inner.release(runId, segment, owner);
  }
  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    if (this.dead) await forever();
    return this.inner.leaseOf(runId);
  }
  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const body = JSON.parse(sealed.slice(sealed.indexOf(".", 3) + 1)) as { kind: string; tool: string };
    const hit = this.crash?.op === "recordCall" && this.crash.kind === body.kind && this.crash.tool === body.tool;
    await this.#gate(hit, () => this.inner.recordCall(runId, segment, seq, sealed));
  }
  async latest(runId: string): Promise<StoredCheckpoint> {
    if (this.dead) await forever();
    return this.inner.latest(runId);
  }
  listUnfinished(flow: string, options?: ListOptions): AsyncIterable<string> {
    return this.inner.listUnfinished(flow, options);
  }
  async delete(runId: string): Promise<void> {
    return this.inner.delete(runId);
  }
  async calls(runId: string, from?: CallPosition): Promise<StoredCall[]> {
    if (this.dead) await forever();
    return this.inner.calls(runId, from);
  }
  /** Events go through as they are (a sender is not the dying worker), and a dead worker reads no inbox. */
  async sendEvent(runId: string, event: { seq: number; key: string; sealed: string }): Promise<boolean> {
    if (this.inner.sendEvent === undefined) throw new Error("the store under this DyingStore has no events capability");
    return this.inner.sendEvent(runId, event);
  }
  async inbox(runId: string, from?: number): Promise<StoredEvent[]> {
    if (this.dead) await forever();
    return this.inner.inbox?.(runId, from) ?? [];
  }
  /** A dead worker streams nothing more and reads no stream. */
  async appendStream(runId: string, batch: StreamBatch): Promise<void> {
    if (this.dead) await forever();
    if (this.inner.appendStream === undefined)
      throw new Error("the store under this DyingStore has no streams capability");
    return this.inner.appendStream(runId, batch);
  }
  async stream(runId: string, from?: number): Promise<StoredStreamBatch[]> {
    if (this.dead) await forever();
    return this.inner.stream?.(runId, from) ?? [];
  }
  async dropStream(runId: string): Promise<void> {
    return this.inner.dropStream?.(runId);
  }
  async close(): Promise<void> {}

  async #gate(hit: boolean, write: () => Promise<void>): Promise<void> {
    if (this.dead) await forever();
    if (hit && this.crash?.when === "before") await this.#die();
    await write();
    if (hit) await this.#die();
  }

  async #die(): Promise<never> {
    await this.die();
    return forever();
  }

  /** The worker dies now (inside a tool, waiting on a port): nothing more goes through, and its lease runs out. */
  async die(): Promise<void> {
    this.dead = true;
    const held = this.#held;
    if (held !== undefined) await this.inner.release(held.runId, held.segment, held.owner);
  }
}

/** Lets pending promises and timers run, so a dying worker reaches its crash point. */
export async function settle(ms = 20): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `store` with some methods replaced and every other one forwarded as it is
 * (a lease given to `save`, the options of `listUnfinished`): how a test
 * breaks one operation without writing a whole store.
 */
export function storeWith(store: CheckpointStore, overrides: Partial<CheckpointStore>): CheckpointStore {
  return {
    save: (runId, step, row, lease) => store.save(runId, step, row, lease),
    latest: (runId) => store.latest(runId),
    listUnfinished: (flow, options) => store.listUnfinished(flow, options),
    delete: (runId) => store.delete(runId),
    recordCall: (runId, segment, seq, sealed) => store.recordCall(runId, segment, seq, sealed),
    calls: (runId, from) => store.calls(runId, from),
    renew: (runId, segment, terms) => store.renew(runId, segment, terms),
    release: (runId, segment, owner) => store.release(runId, segment, owner),
    leaseOf: (runId) => store.leaseOf(runId),
    close: () => store.close(),
    ...(store.history === undefined ? {} : { history: (runId, from) => store.history!(runId, from) }),
    ...(store.sendEvent === undefined ? {} : { sendEvent: (runId, event) => store.sendEvent!(runId, event) }),
    ...(store.inbox === undefined ? {} : { inbox: (runId, from) => store.inbox!(runId, from) }),
    ...(store.listQueued === undefined ? {} : { listQueued: (queue) => store.listQueued!(queue) }),
    ...(store.appendStream === undefined ? {} : { appendStream: (runId, batch) => store.appendStream!(runId, batch) }),
    ...(store.stream === undefined ? {} : { stream: (runId, from) => store.stream!(runId, from) }),
    ...(store.dropStream === undefined ? {} : { dropStream: (runId) => store.dropStream!(runId) }),
    ...overrides,
  };
}

/** What a store was asked, by method: listings, and reads of single runs. */
export interface StoreReads {
  /** `listUnfinished` calls. */
  listings: number;
  /** `latest`, `calls` and `leaseOf` calls: reads of one run each. */
  runReads: number;
}

/**
 * `store` counting the reads it is asked (`reads`): what a worker costs a
 * store while it has nothing to do. Every other method is forwarded as it is.
 */
export function countingReads(store: CheckpointStore): { store: CheckpointStore; reads: StoreReads } {
  const reads: StoreReads = { listings: 0, runReads: 0 };
  const counted = storeWith(store, {
    listUnfinished: (flow, options) => {
      reads.listings += 1;
      return store.listUnfinished(flow, options);
    },
    latest: (runId) => {
      reads.runReads += 1;
      return store.latest(runId);
    },
    calls: (runId) => {
      reads.runReads += 1;
      return store.calls(runId);
    },
    leaseOf: (runId) => {
      reads.runReads += 1;
      return store.leaseOf(runId);
    },
  });
  return { store: counted, reads };
}
