import type { OptionTable } from "../base/option-checks.js";
import { checkAnchor, type RunAnchor } from "../store/anchor.js";
import { anchoredStore } from "../store/anchored-store.js";
import type { CheckpointStore } from "../store/contract.js";
import { sealerFor } from "../seal/checkpoint.js";
import type { CheckpointKeys, EncryptionKeys, Sealer } from "../seal/sealer.js";

/** Where a runner keeps its runs, and how they are protected (see docs/security.md). */
export interface StorageOptions {
  readonly checkpoints: CheckpointStore;
  /**
   * Signs every row: at least 32 bytes (HMAC-SHA256), or an Ed25519 private
   * key, the same on every worker; a list rotates keys (the first signs, all
   * verify). Required unless the store is in-process only.
   */
  readonly checkpointKey?: CheckpointKeys;
  /**
   * Encrypts every sealed payload (state, call arguments and results,
   * decisions) with AES-256-GCM: at least 32 random bytes, the same on every
   * worker; a list rotates keys (the first encrypts, all decrypt).
   */
  readonly encryptionKey?: EncryptionKeys;
  /**
   * A second place that keeps each run's head, raised after each commit and
   * read on every recovery: with it, a rolled-back or truncated run is
   * `CheckpointStoreCorrupt`.
   */
  readonly anchor?: RunAnchor;
}

/**
 * The options of `StorageOptions`, each checked where it is used:
 * `checkpoints` by `checkStore`, the keys by the sealer, `anchor` by
 * `runStorage`. A table of options that extend them spreads it.
 */
export const STORAGE_OPTIONS: OptionTable<StorageOptions> = {
  checkpoints: true,
  checkpointKey: true,
  encryptionKey: true,
  anchor: true,
};

/** The store a runner writes through (checked against its anchor, if any) and its sealer. */
export function runStorage(where: string, options: StorageOptions): { store: CheckpointStore; sealer: Sealer } {
  checkAnchor(where, options.anchor);
  return {
    store: anchoredStore(options.checkpoints, options.anchor),
    sealer: sealerFor(options.checkpoints, options.checkpointKey, options.encryptionKey),
  };
}
