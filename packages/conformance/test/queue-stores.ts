import { MemoryCheckpointStore } from "@durable/core";
import type { MemoryData } from "@durable/core/internal";
import type { CheckpointRow, LeaseClaim, LeaseTerms, QueuedRun, QueuePlace, RunWrite } from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import { broken } from "./broken-stores.js";

/**
 * Stores that each break one rule of the queues capability, as a store
 * author could by mistake: forks of the memory store with ONE bug each, for
 * the kit's queue group to catch.
 */

/** The memory store with its rows in reach, keeping each queued run's place as `forget` leaves it. */
class QueueFork extends MemoryCheckpointStore {
  protected readonly data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.data = data;
  }
  /** What the fork keeps of a place: all of it, unless a fork forgets a part. */
  protected forget(place: QueuePlace): QueuePlace {
    return place;
  }
  override save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    return super.save(runId, step, this.#kept(row), lease);
  }
  override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    return super.commit(
      runId,
      writes.map((write) => (write.kind === "save" ? { ...write, row: this.#kept(write.row) } : write)),
    );
  }
  #kept(row: CheckpointRow): CheckpointRow {
    return row.queue === undefined ? row : { ...row, queue: this.forget(row.queue) };
  }
}

/** Keeps no concurrency limit: every take of a queue is accepted. */
class IgnoresConcurrency extends QueueFork {
  protected override forget({ concurrency: _, ...place }: QueuePlace): QueuePlace {
    return place;
  }
}

/** Keeps no per-key limit. */
class IgnoresPerKey extends QueueFork {
  protected override forget({ perKey: _, ...place }: QueuePlace): QueuePlace {
    return place;
  }
}

/** Keeps no rate limit. */
class IgnoresRate extends QueueFork {
  protected override forget({ rate: _, ...place }: QueuePlace): QueuePlace {
    return place;
  }
}

/** Keeps every run at priority 0: the queue is FIFO only. */
class IgnoresPriority extends QueueFork {
  protected override forget(place: QueuePlace): QueuePlace {
    return { ...place, priority: 0 };
  }
}

/** Lists a queue newest first within a priority. */
class ListsNewestFirst extends QueueFork {
  override async *listQueued(queue: string): AsyncIterable<QueuedRun> {
    const runs: QueuedRun[] = [];
    for await (const run of super.listQueued(queue)) runs.push(run);
    const place = (run: QueuedRun) => this.data.get(run.runId)?.queue;
    runs.sort(
      (a, b) =>
        (place(b)?.place.priority ?? 0) - (place(a)?.place.priority ?? 0) ||
        (place(b)?.queuedAt ?? 0) - (place(a)?.queuedAt ?? 0),
    );
    yield* runs;
  }
}

/** Lists queued runs in the claimable listing too: a worker serving the flow takes them out of the queue's order. */
class ListsQueuedAsClaimable extends QueueFork {
  override async *listUnfinished(name: string, options?: { claimable?: boolean }): AsyncIterable<string> {
    yield* super.listUnfinished(name, options);
    if (options?.claimable !== true) return;
    const queues = new Set(
      [...this.data.values()].flatMap((entry) => (entry.queue === undefined ? [] : [entry.queue.place.queue])),
    );
    for (const queue of queues) for await (const run of this.listQueued(queue)) if (run.name === name) yield run.runId;
  }
}

/** Does `write` with the run's queue place out of sight: the store takes the run for one started on no queue. */
async function unqueued<T>(data: MemoryData, runId: string, write: () => Promise<T>): Promise<T> {
  const entry = data.get(runId);
  const queue = entry?.queue;
  if (entry !== undefined) delete entry.queue;
  try {
    return await write();
  } finally {
    if (entry !== undefined && queue !== undefined) entry.queue = queue;
  }
}

/** Renews a lease that ran out without counting the queue: a worker back from a pause holds a slot over the limit. */
class RenewsWithoutTaking extends QueueFork {
  override renew(runId: string, segment: number, terms: LeaseTerms) {
    return unqueued(this.data, runId, () => super.renew(runId, segment, terms));
  }
}

/** Checks the limits on `save` only: a take by `commit` is never refused. */
class CommitsWithoutTaking extends QueueFork {
  override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    return unqueued(this.data, runId, () => super.commit(runId, writes));
  }
}

/** Takes each row's place as the run's, as a store reading its latest row would: a row that names none frees the run of its queue. */
class TakesEachRowsPlace extends QueueFork {
  override save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    this.#follow(runId, row);
    return super.save(runId, step, row, lease);
  }
  override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    for (const write of writes) if (write.kind === "save") this.#follow(runId, write.row);
    return super.commit(runId, writes);
  }
  #follow(runId: string, row: CheckpointRow): void {
    const entry = this.data.get(runId);
    if (entry === undefined) return;
    if (row.queue === undefined) delete entry.queue;
    else entry.queue = { place: row.queue, queuedAt: entry.queue?.queuedAt ?? 0 };
  }
}

export const ignoresConcurrency: ConformanceInitializer = broken(
  "ignores a queue's concurrency",
  () => new IgnoresConcurrency(),
);
export const ignoresPerKey: ConformanceInitializer = broken(
  "ignores a queue's per-key limit",
  () => new IgnoresPerKey(),
);
export const ignoresRate: ConformanceInitializer = broken("ignores a queue's rate limit", () => new IgnoresRate());
export const ignoresPriority: ConformanceInitializer = broken("ignores queue priorities", () => new IgnoresPriority());
export const listsNewestFirst: ConformanceInitializer = broken(
  "lists a queue newest first",
  () => new ListsNewestFirst(),
);
export const listsQueuedAsClaimable: ConformanceInitializer = broken(
  "lists queued runs as claimable",
  () => new ListsQueuedAsClaimable(),
);
export const renewsWithoutTaking: ConformanceInitializer = broken(
  "renews a lease that ran out without counting its queue",
  () => new RenewsWithoutTaking(),
);
export const commitsWithoutTaking: ConformanceInitializer = broken(
  "checks queue limits on save only",
  () => new CommitsWithoutTaking(),
);
export const takesEachRowsPlace: ConformanceInitializer = broken(
  "takes each row's queue place as the run's",
  () => new TakesEachRowsPlace(),
);
