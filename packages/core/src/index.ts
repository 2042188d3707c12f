// `@durable/core`: what an application uses. Store authors take `@durable/core/store`,
// runner packages `@durable/core/runner`; each entry re-exports, so a class is one class everywhere.
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  RecoveryNeedsDecision,
  FlowError,
  IdentityMismatch,
  InvalidInput,
  InvalidToolArgs,
  UnrecordableResult,
  ApprovalDenied,
  StoreUnavailable,
  StoreNotReady,
  LeaseHeld,
  ToolFailed,
  ToolTimedOut,
  NonRetryable,
  type DurableErrorCode,
  type InDoubtReason,
  type InDoubtCall,
} from "./errors.js";
export { ToolRegistry, type ToolFn, type ToolOptions, type ToolDefinition, type ToolContext } from "./tools.js";
export {
  Executor,
  type ExecutorOptions,
  type Decisions,
  type ApprovalDecision,
  type ApprovalPort,
  type ApprovalRequest,
} from "./executor.js";
export { idempotencyKey } from "./idempotency.js";
export {
  decideCalls,
  type CallDecision,
  type CallDecisions,
  type DecideCallsOptions,
} from "./call-decisions.js";
export {
  approvePending,
  decideInDoubt,
  requestRetry,
  cancelStored,
  operatorMark,
  type OperatorAction,
  type OperatorMark,
  type OperatorOptions,
} from "./operator.js";
export type { RetryPolicy } from "./retry.js";
export type {
  DurableEvent,
  EventSink,
  CallRef,
  LoopStage,
  CheckpointSaved,
  RunRecovered,
  RunNeedsDecision,
  CallStarted,
  CallDone,
  CallFailed,
  CallRetrying,
  RunCancelled,
  RunPaused,
  RunEnded,
} from "./events.js";
export type { PausedResult, RecoverOptions, RecoverEachOptions, Recovered } from "./run-program.js";
export { workerId, DEFAULT_LEASE_MS, type LeaseOptions } from "./lease.js";
export { RunWorker, startWorker, type WorkerOptions, type WorkerStatus, type ServedRuns } from "./worker.js";
export type { PendingCall } from "./replay.js";
export { MemoryCheckpointStore, type MemoryData, type MemoryRun, type MemoryStoreOptions } from "./memory-store.js";
export { jsonlEventSink, readJsonlEvents } from "./event-log.js";
export { newRunId } from "./run-id.js";
export type { Identity } from "./identity.js";
export type { StorageOptions } from "./run-storage.js";
export { MemoryRunAnchor, type RunAnchor, type AnchoredHead } from "./anchor.js";
export type { CheckpointKey, CheckpointKeys, EncryptionKey, EncryptionKeys } from "./seal.js";
export type { CheckpointStore, RunKind, RunStatus, Lease, LeaseView } from "./checkpoint-store.js";
export type { RunQuery, RunSummary, RunPage } from "./run-listing.js";
export type { JsonValue, JsonObject } from "./canonical.js";
export type { ValueCodec } from "./codec.js";
