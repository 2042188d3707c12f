import type { LeaseView } from "@durable/core/store";
import { type CheckpointStore, StoreUnavailable } from "@durable/core";
import { POLL_MS } from "./demo-runner.js";

/** A run another worker holds, whose lease was not renewed between two looks. */
export interface HeldRun {
  readonly runId: string;
  readonly lease: LeaseView;
}

/**
 * Watches the leases of a flow's unfinished runs that other workers hold, as
 * the store reads them, and tells `onHeld` once of each run whose lease stayed
 * where it was for a whole look (a run moving on renews it with every save).
 * It only reads: claiming is the worker's, and the store refuses a live lease.
 */
export class LeaseWatch {
  readonly #seen = new Map<string, LeaseView>();
  readonly #told = new Map<string, LeaseView>();
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(
    readonly store: CheckpointStore,
    readonly flow: string,
    readonly owner: string,
    readonly onHeld: (held: HeldRun) => void,
  ) {
    this.#done = this.#watch();
  }

  /** The last held lease it told of for a run, if any. */
  toldOf(runId: string): LeaseView | undefined {
    return this.#told.get(runId);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }

  async #watch(): Promise<void> {
    while (!this.#stopped) {
      // A store that does not answer for a moment is looked at again; the worker waits it out the same way.
      await this.#look().catch((error: unknown) => {
        if (!(error instanceof StoreUnavailable)) throw error;
      });
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  async #look(): Promise<void> {
    const held = new Map<string, LeaseView>();
    for await (const runId of this.store.listUnfinished(this.flow)) {
      const lease = await this.store.leaseOf(runId);
      // Each drive of this worker holds its leases as `<worker id>#<drive>`: those are its own.
      const own = lease?.owner.startsWith(`${this.owner}#`) === true;
      if (lease === undefined || own || lease.expiresAt <= lease.now) continue;
      held.set(runId, lease);
      const before = this.#seen.get(runId);
      if (before?.expiresAt === lease.expiresAt && !this.#told.has(runId)) {
        this.#told.set(runId, lease);
        this.onHeld({ runId, lease });
      }
    }
    // Only runs still held are remembered: memory stays as small as the runs in flight.
    this.#seen.clear();
    for (const [runId, lease] of held) this.#seen.set(runId, lease);
  }
}
