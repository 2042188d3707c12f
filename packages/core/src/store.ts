// `@durable/core/store`: what a store author needs: the protocol, its refusal rules, the errors a store throws.
export {
  isEnded,
  UNFINISHED,
  type CheckpointStore,
  type CheckpointRow,
  type Lease,
  type LeaseView,
  type LeaseTerms,
  type LeaseClaim,
  type ListOptions,
  type StoredCheckpoint,
  type StoredCall,
  type RunKind,
  type RunStatus,
  type RunWrite,
} from "./checkpoint-store.js";
export { mergeHeads, isAnchoredHead, type AnchoredHead, type RunAnchor } from "./anchor.js";
export {
  saveRefusal,
  recordRefusal,
  claimRefusal,
  leaseAfterSave,
  SAVE_RENEWS_AFTER,
  renewRefusal,
  isClaimable,
  checkLeaseTerms,
  checkBatch,
  commitRefusal,
  MAX_BATCH_WRITES,
  MAX_OWNER_LENGTH,
  type RunHead,
} from "./protocol.js";
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  LeaseHeld,
  InvalidInput,
  StoreUnavailable,
  StoreNotReady,
} from "./errors.js";
