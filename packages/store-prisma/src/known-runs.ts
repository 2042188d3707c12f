import type { Lease, QueuePlace, RunHead } from "@durable/core/store";

/**
 * A run's row as the protocol's rules read it, with how many records its
 * current segment holds, how many events its inbox holds, and the queue
 * place its step 0 gave (undefined for a run on no queue).
 */
export interface RunState extends RunHead {
  readonly segmentCalls: number;
  readonly events: number;
  readonly queue?: QueuePlace | undefined;
}

/** A run's row and lease as this store last wrote or read them. */
export interface KnownRun {
  readonly head: RunState;
  readonly lease: Lease | undefined;
}

/** How many runs a store remembers: the runs its workers have in flight, with room to spare. */
const MOST = 10_000;

/**
 * The rows of the runs this store wrote last, so the next batch of a run it
 * drives is decided with no read. Only a guess: the write is a
 * compare-and-set on every column the rules read, so a row another worker
 * changed since makes it miss, and the batch is decided again on a read. The
 * oldest is forgotten first; an ended run is not kept.
 */
export class KnownRuns {
  readonly #runs = new Map<string, KnownRun>();

  get(runId: string): KnownRun | undefined {
    return this.#runs.get(runId);
  }

  /** Remembers what a write left (a running run), or forgets the run. */
  set(runId: string, run: KnownRun | undefined): void {
    this.#runs.delete(runId);
    if (run === undefined || run.head.status !== "running") return;
    this.#runs.set(runId, run);
    const oldest = this.#runs.keys().next().value;
    if (this.#runs.size > MOST && oldest !== undefined) this.#runs.delete(oldest);
  }

  forget(runId: string): void {
    this.#runs.delete(runId);
  }
}
