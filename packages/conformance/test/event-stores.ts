import { MemoryCheckpointStore } from "@durable/core";
import type { MemoryData } from "@durable/core/internal";
import {
  type CheckpointRow,
  isEnded,
  type LeaseClaim,
  type RunWrite,
  type StoredEvent,
  WAITING,
} from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import { broken } from "./broken-stores.js";

/**
 * Stores that each break one promise of the events capability, as a store
 * author could by mistake: forks of the memory store with ONE bug each, for
 * the kit's events group to catch.
 */

type Event = { seq: number; key: string; sealed: string };

/** The memory store with its rows in reach, appending an event its own (wrong) way. */
class EventFork extends MemoryCheckpointStore {
  protected readonly data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.data = data;
  }
  /** Appends the event whatever the rules say, where the inbox ends. */
  protected append(runId: string, { key, sealed }: Event): boolean {
    const entry = this.data.get(runId);
    if (entry === undefined) return false;
    const inbox: StoredEvent[] = entry.inbox ?? [];
    entry.inbox = [...inbox, { runId, seq: inbox.length, key, sealed }];
    return true;
  }
}

/** Appends a resend as another event. */
class AppendsResends extends EventFork {
  override async sendEvent(runId: string, event: Event): Promise<boolean> {
    const held = (this.data.get(runId)?.inbox ?? []).some((row) => row.key === event.key);
    return held ? this.append(runId, event) : super.sendEvent(runId, event);
  }
}

/** Takes events for runs that ended. */
class TakesEventsWhenEnded extends EventFork {
  override async sendEvent(runId: string, event: Event): Promise<boolean> {
    const latest = this.data.get(runId)?.checkpoints.at(-1);
    return latest !== undefined && isEnded(latest.status) ? this.append(runId, event) : super.sendEvent(runId, event);
  }
}

/** Leaves a waiting run's lease in place when an event comes: the run sleeps through it. */
class KeepsWaitingLease extends EventFork {
  override async sendEvent(runId: string, event: Event): Promise<boolean> {
    const lease = this.data.get(runId)?.lease;
    const sent = await super.sendEvent(runId, event);
    const entry = this.data.get(runId);
    if (entry !== undefined) entry.lease = lease;
    return sent;
  }
}

/** Lets a run wait although an event came after the worker read the inbox: the event is missed until the timeout. */
class IgnoresEventsSeen extends EventFork {
  override save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    return super.save(runId, step, row, seenAll(lease));
  }
  override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    return super.commit(
      runId,
      writes.map((write) => (write.kind === "save" ? { ...write, lease: seenAll(write.lease) } : write) as RunWrite),
    );
  }
}

function seenAll(lease: LeaseClaim | undefined): LeaseClaim | undefined {
  return lease?.owner === WAITING ? { ...lease, events: Number.MAX_SAFE_INTEGER } : lease;
}

export const appendsResends: ConformanceInitializer = broken("appends a resend", () => new AppendsResends());
export const takesEventsWhenEnded: ConformanceInitializer = broken(
  "takes events for ended runs",
  () => new TakesEventsWhenEnded(),
);
export const keepsWaitingLease: ConformanceInitializer = broken(
  "keeps a waiting run's lease when an event comes",
  () => new KeepsWaitingLease(),
);
export const ignoresEventsSeen: ConformanceInitializer = broken(
  "lets a run wait past an event it did not see",
  () => new IgnoresEventsSeen(),
);
