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
} from "./base/errors.js";
export { ToolRegistry, type ToolFn, type ToolOptions, type ToolDefinition, type ToolContext } from "./calls/tools.js";
export { Executor, type ExecutorOptions } from "./calls/executor.js";
export type { Decisions, ApprovalDecision, ApprovalPort, ApprovalRequest } from "./calls/approvals.js";
export { idempotencyKey } from "./calls/idempotency.js";
export {
  decideCalls,
  type CallDecision,
  type CallDecisions,
  type DecideCallsOptions,
} from "./run/in-doubt-decisions.js";
export {
  approvePending,
  decideInDoubt,
  requestRetry,
  cancelStored,
  operatorMark,
  type OperatorAction,
  type OperatorMark,
  type OperatorOptions,
} from "./operator/actions.js";
export type { RetryPolicy } from "./calls/retry.js";
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
} from "./log/events.js";
export type { PausedResult, RecoverOptions, RecoverEachOptions, Recovered } from "./driver/program.js";
export { workerId, DEFAULT_LEASE_MS, type LeaseOptions } from "./run/lease.js";
export { RunWorker, startWorker, type WorkerOptions, type WorkerStatus, type ServedRuns } from "./driver/worker.js";
export type { PendingCall } from "./calls/replay.js";
export {
  MemoryCheckpointStore,
  type MemoryData,
  type MemoryRun,
  type MemoryStoreOptions,
} from "./store/memory-store.js";
export { jsonlEventSink, readJsonlEvents } from "./log/jsonl-events.js";
export { newRunId } from "./base/names.js";
export type { Identity } from "./base/identity.js";
export type { StorageOptions } from "./run/storage.js";
export { MemoryRunAnchor, type RunAnchor, type AnchoredHead } from "./store/anchor.js";
export type { CheckpointKey, CheckpointKeys, EncryptionKey, EncryptionKeys } from "./seal/sealer.js";
export type { CheckpointStore, RunKind, RunStatus, Lease, LeaseView } from "./store/contract.js";
export type { RunQuery, RunSummary, RunPage } from "./store/contract.js";
export type { JsonValue, JsonObject } from "./base/json.js";
export type { ValueCodec } from "./base/codec.js";
