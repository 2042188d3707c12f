import { CheckpointNotFound, MemoryCheckpointStore } from "@durable/core";
import {
  type CheckpointRow,
  checkLeaseTerms,
  isEnded,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  renewRefusal,
  saveRefusal,
} from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import { broken, ForkedMemoryStore } from "./broken-stores.js";

/**
 * The broken-store catalogue's lease bugs: forks of the memory store that keep
 * leases with ONE rule broken each, and wrappers that drop what leases need.
 * The lease group must fail each.
 */

/** Passes `save` on without its lease, as a wrapper store that forwards only the arguments it knew of. */
class DropsSaveLease extends MemoryCheckpointStore {
  override save(runId: string, step: number, row: CheckpointRow): Promise<void> {
    return super.save(runId, step, row);
  }
}

/** Passes `listUnfinished` on without its options: every unfinished run is listed as claimable. */
class DropsListOptions extends MemoryCheckpointStore {
  override listUnfinished(flow: string): AsyncIterable<string> {
    return super.listUnfinished(flow);
  }
}

/** How a fork keeps leases; the memory store's way is its own clock, held claims refused, renewals by the owner only. */
interface LeaseKeeping {
  /** The clock a lease is measured by; the bug is the worker's `Date.now`, which drifts and can be set. */
  readonly clock?: () => number;
  readonly refusesHeldClaims: boolean;
  readonly renewalChecksOwner: boolean;
  /** False: a save keeps its owner's lease as it was, however much of it passed. */
  readonly savesRenew?: boolean;
  /** False: a save of the segment that holds the lease keeps the lease its holder had, whoever it names (a sleep's). */
  readonly savesHandOver?: boolean;
}

/** Keeps leases by the memory store's rules, except where `keeping` departs from them: that is the bug. */
class LeaseKeepingFork extends ForkedMemoryStore {
  constructor(readonly keeping: LeaseKeeping) {
    super();
  }
  protected override clock(): number {
    return this.keeping.clock?.() ?? super.clock();
  }
  protected override leaseRefusal(runId: string, row: CheckpointRow, lease: LeaseClaim | undefined) {
    const refused = super.leaseRefusal(runId, row, lease);
    return this.keeping.refusesHeldClaims ? refused : undefined;
  }
  override async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    const refused = saveRefusal(runId, step, row, this.head(runId)) ?? this.leaseRefusal(runId, row, lease);
    if (refused !== undefined) throw refused;
    const held = this.data.get(runId)?.lease;
    this.append(runId, step, row, lease);
    const entry = this.data.get(runId);
    if (this.keeping.savesRenew === false && entry?.lease !== undefined && held?.owner === lease?.owner)
      entry.lease = held;
    const claimed = row.segment > (entry?.checkpoints.at(-2)?.segment ?? -1);
    if (this.keeping.savesHandOver === false && entry !== undefined && held !== undefined && !claimed)
      entry.lease = held;
  }
  override async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    const entry = this.data.get(runId);
    const held = entry?.lease;
    // Without the owner check, any worker extends the holder's lease, as `UPDATE … WHERE segment = ?` would.
    const checked = this.keeping.renewalChecksOwner || held === undefined ? held : { ...held, owner: terms.owner };
    const refused = renewRefusal(runId, segment, terms.owner, entry?.checkpoints.at(-1), checked);
    if (refused !== undefined || entry === undefined || held === undefined)
      throw refused ?? new CheckpointNotFound(runId);
    entry.lease = { owner: held.owner, expiresAt: this.clock() + terms.ms };
    return entry.lease;
  }
  override async leaseOf(runId: string): Promise<LeaseView | undefined> {
    const lease = this.data.get(runId)?.lease;
    return lease === undefined ? undefined : { ...lease, now: this.clock() };
  }
  override async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    for (const [runId, entry] of [...this.data]) {
      const head = entry.checkpoints.at(-1);
      if (head !== undefined && head.name === flow && !isEnded(head.status) && this.listable(entry, options))
        yield runId;
    }
  }
}

/** The lease fork keeping every rule: the lease group passes it, so each lease bug below is the only one. */
export const leaseKeepingMemory: ConformanceInitializer = broken(
  "memory with leases kept by a fork",
  () => new LeaseKeepingFork({ refusesHeldClaims: true, renewalChecksOwner: true }),
);
export const ignoresLeases: ConformanceInitializer = broken(
  "ignores leases",
  () => new LeaseKeepingFork({ refusesHeldClaims: false, renewalChecksOwner: true }),
);
export const leaseByWorkerClock: ConformanceInitializer = broken(
  "measures leases by the worker's clock",
  () => new LeaseKeepingFork({ clock: () => Date.now(), refusesHeldClaims: true, renewalChecksOwner: true }),
);
export const renewsForAnyone: ConformanceInitializer = broken(
  "lets a non-owner renew a lease",
  () => new LeaseKeepingFork({ refusesHeldClaims: true, renewalChecksOwner: false }),
);
export const savesNeverRenew: ConformanceInitializer = broken(
  "never renews a lease on a save",
  () => new LeaseKeepingFork({ refusesHeldClaims: true, renewalChecksOwner: true, savesRenew: false }),
);
export const keepsLeaseThroughSleep: ConformanceInitializer = broken(
  "keeps the saving worker's lease when a save hands it to a sleep",
  () => new LeaseKeepingFork({ refusesHeldClaims: true, renewalChecksOwner: true, savesHandOver: false }),
);
export const dropsSaveLease: ConformanceInitializer = broken("drops save's lease", () => new DropsSaveLease());
export const dropsListOptions: ConformanceInitializer = broken(
  "drops listUnfinished's options",
  () => new DropsListOptions(),
);
