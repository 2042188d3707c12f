import type { ValueCodec } from "../base/codec.js";
import type { LeaseOptions } from "../run/lease.js";
import type { OptionTable } from "../base/option-checks.js";
import { STORAGE_OPTIONS, type StorageOptions } from "../run/storage.js";
import type { CheckpointKeys } from "../seal/sealer.js";

/** The actions an operator records. */
export type OperatorAction = "approve" | "decide" | "retry" | "cancel" | "wake" | "migrate" | "fork";

/** Who acted, how and when: sealed into the checkpoint an operator's action saves (its data's `operator`). */
export interface OperatorMark {
  readonly action: OperatorAction;
  readonly by: string;
  /** ISO 8601, by the operator's clock. */
  readonly at: string;
  readonly reason?: string;
}

/**
 * Where an operator acts, and as whom: the workers' storage options (their
 * key, and their `encryptionKey` and anchor when they use them), since an
 * action reads the run and writes to it as a worker does.
 */
export interface OperatorOptions extends StorageOptions {
  readonly checkpointKey: CheckpointKeys;
  /** Who acts (1 to 200 characters), recorded with the action. */
  readonly by: string;
  /** The step the operator saw: the action is refused (`CheckpointConflict`) when the run's latest step is another. */
  readonly expectStep?: number;
  /**
   * The lease held while the action is recorded (default: this process's
   * worker id, 30 s), under an owner of the action's own (`<owner>#<random>`);
   * released at its end. A run another drive holds refuses the action
   * (`LeaseHeld`), except a cancel, which takes it over.
   */
  readonly lease?: LeaseOptions;
  /** How a decided `{ result }` is stored: the workers' codec (default: plain JSON). */
  readonly codec?: ValueCodec;
}

/** The options of `OperatorOptions`, each checked by the action (`lease` also by `leaseTerms`). */
export const OPERATOR_OPTIONS: OptionTable<OperatorOptions> = {
  ...STORAGE_OPTIONS,
  by: true,
  expectStep: true,
  lease: "object",
  codec: true,
};
