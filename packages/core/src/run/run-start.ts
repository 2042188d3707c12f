import type { Identity } from "../base/identity.js";
import type { JsonValue } from "../base/json.js";
import type { StreamTerms } from "../log/run-stream.js";
import type { Sealer } from "../seal/sealer.js";
import type { CallPosition, CheckpointStore, LeaseTerms, QueuePlace, RunKind } from "../store/contract.js";

/** What a new run starts from. */
export interface RunStart {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly runId: string;
  readonly name: string;
  readonly kind: RunKind;
  readonly identity: Identity;
  readonly data: JsonValue;
  /**
   * The worker's lease terms (default: this process's worker, 30 s): the run
   * takes its own owner from them (`driveLease`), and each running save takes or renews its lease.
   */
  readonly lease?: LeaseTerms | undefined;
  /** At most this many changes between two snapshots (default: by size alone). */
  readonly snapshotEvery?: number | undefined;
  /** A run started on a queue: its step-0 row gives the store its place (`CheckpointRow.queue`). */
  readonly queue?: QueuePlace | undefined;
  /** False for a run left to the fleet (`RunDriver.enqueue`): step 0 is saved with no lease, so a worker claims it at once. */
  readonly leased?: boolean;
  /** The drive writes the run's stream (a store with the streams capability: `streamStore`). */
  readonly stream?: StreamTerms | undefined;
}

/** What a claim is given besides the latest checkpoint. */
export interface ClaimOptions {
  /** The worker's lease terms, as `RunStart.lease`. */
  readonly lease?: LeaseTerms | undefined;
  /** Claim even while another worker's lease is live (that worker is fenced). */
  readonly takeOver?: boolean | undefined;
  /** Replaces the checkpoint's data (a resume stores its answers so). */
  readonly data?: JsonValue | undefined;
  /** Where the round the claim goes on with began in the log: the records before it are not read. */
  readonly callsFrom?: CallPosition | undefined;
  /** As `RunStart.snapshotEvery`. */
  readonly snapshotEvery?: number | undefined;
  /**
   * False for a claim that is an action's one write (an operator's approval
   * or wake): it takes no lease (`LeaseHeld` still refuses it), so it is no
   * take of the run's queue, and the run is claimable once it landed.
   */
  readonly leased?: boolean | undefined;
  /** As `RunStart.stream`. */
  readonly stream?: StreamTerms | undefined;
  /** Saves the claim `paused`, not `running`: an operator's change to a paused run that keeps it waiting (a migration). */
  readonly paused?: boolean | undefined;
}
