// `@durable/core/store`: what a store author needs: the protocol, its refusal rules, the errors a store throws.
export {
  atOrAfter,
  isEnded,
  UNFINISHED,
  type CallPosition,
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
  type RunQuery,
  type RunSummary,
  type RunPage,
} from "./store/contract.js";
export { closedWhileUsed, type StoreOperation } from "./store/store-closed.js";
export { mergeHeads, isAnchoredHead, MemoryRunAnchor, type AnchoredHead, type RunAnchor } from "./store/anchor.js";
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
} from "./store/rules.js";
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  LeaseHeld,
  InvalidInput,
  StoreUnavailable,
  StoreNotReady,
} from "./base/errors.js";
export {
  checkedCheckpoint,
  checkedCall,
  checkedHead,
  wholeNumber,
  malformedColumn,
  type CheckpointColumns,
  type CallColumns,
  type HeadColumns,
} from "./store/rows.js";
export {
  checkRunQuery,
  matchesRunQuery,
  newestFirst,
  runCursor,
  runPage,
  MAX_RUN_PAGE,
  type RunPosition,
  type ResolvedRunQuery,
} from "./store/listing.js";
