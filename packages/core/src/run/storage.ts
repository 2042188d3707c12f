import { InvalidInput } from "../base/errors.js";
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
  /**
   * On a store with `history`, each checkpoint holds what changed since the
   * one before; a snapshot of the whole data is written when the chain since
   * the last one would pass twice the data it rebuilds, and, with this, after
   * at most this many changes (what a recovery reads is then bounded in rows
   * too, for more bytes stored). Default: by size alone.
   */
  readonly snapshotEvery?: number;
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
  snapshotEvery: true,
};

/**
 * The store a runner writes through (checked against its anchor, if any),
 * its sealer, and how often it writes a snapshot (`snapshotEvery`, a whole
 * number ≥ 1, or `InvalidInput`).
 */
export function runStorage(
  where: string,
  options: StorageOptions,
): { store: CheckpointStore; sealer: Sealer; snapshotEvery?: number } {
  checkAnchor(where, options.anchor);
  const every = options.snapshotEvery;
  if (every !== undefined && !(Number.isSafeInteger(every) && every >= 1))
    throw new InvalidInput(`${where}: snapshotEvery must be a whole number ≥ 1 (changes between snapshots).`);
  return {
    store: anchoredStore(options.checkpoints, options.anchor),
    sealer: sealerFor(options.checkpoints, options.checkpointKey, options.encryptionKey),
    ...(every === undefined ? {} : { snapshotEvery: every }),
  };
}
