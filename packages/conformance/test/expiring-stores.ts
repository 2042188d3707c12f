import type {
  CheckpointRow,
  Lease,
  LeaseClaim,
  LeaseTerms,
  LeaseView,
  ListOptions,
  StoredCall,
  StoredCheckpoint,
} from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import { ForkedMemoryStore } from "./broken-stores.js";

/** Short, so the ttl group's waits stay short; fractions are fine for a store that keeps milliseconds. */
const TTL_SECONDS = 0.3;

/** Which runs an expiring store lets expire besides ended ones; the correct one expires no unfinished run. */
interface ExpiryRules {
  readonly runningExpires: boolean;
  readonly pausedExpires: boolean;
}

/** The memory store with the TTL rule: an ended run's rows expire ttlSeconds after its last write; an unfinished run's never. */
class ExpiringMemoryStore extends ForkedMemoryStore {
  readonly #expiresAt = new Map<string, number>();
  constructor(readonly rules: ExpiryRules) {
    super();
  }
  #touch(runId: string): void {
    const head = this.head(runId);
    if (head === undefined) return;
    const expires =
      head.status === "paused"
        ? this.rules.pausedExpires
        : head.status === "running"
          ? this.rules.runningExpires
          : true;
    if (expires) this.#expiresAt.set(runId, Date.now() + TTL_SECONDS * 1000);
    else this.#expiresAt.delete(runId);
  }
  #expire(): void {
    const now = Date.now();
    for (const [runId, at] of this.#expiresAt) {
      if (at > now) continue;
      this.data.delete(runId);
      this.#expiresAt.delete(runId);
    }
  }
  override async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    this.#expire();
    await super.save(runId, step, row, lease);
    this.#touch(runId);
  }
  override async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    this.#expire();
    return super.renew(runId, segment, terms);
  }
  override async release(runId: string, segment: number, owner: string): Promise<void> {
    this.#expire();
    return super.release(runId, segment, owner);
  }
  override async leaseOf(runId: string): Promise<LeaseView | undefined> {
    this.#expire();
    return super.leaseOf(runId);
  }
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    this.#expire();
    await super.recordCall(runId, segment, seq, sealed);
    this.#touch(runId);
  }
  override async latest(runId: string): Promise<StoredCheckpoint> {
    this.#expire();
    return super.latest(runId);
  }
  override async calls(runId: string): Promise<StoredCall[]> {
    this.#expire();
    return super.calls(runId);
  }
  override listUnfinished(flow: string, options?: ListOptions): AsyncIterable<string> {
    this.#expire();
    return super.listUnfinished(flow, options);
  }
}

function expiring(name: string, rules: ExpiryRules): ConformanceInitializer {
  return {
    name,
    createStore: () => new ExpiringMemoryStore(rules),
    capabilities: { ttl: { ttlSeconds: TTL_SECONDS } },
  };
}

/** The correct one: the ttl group passes it. */
export const expiringMemory: ConformanceInitializer = expiring("memory with a TTL", {
  runningExpires: false,
  pausedExpires: false,
});
export const ttlOnPaused: ConformanceInitializer = expiring("expires paused runs", {
  runningExpires: false,
  pausedExpires: true,
});
/** The rule of earlier versions: a crashed run expired with the evidence of its calls in doubt. */
export const ttlOnRunning: ConformanceInitializer = expiring("expires running runs", {
  runningExpires: true,
  pausedExpires: false,
});
