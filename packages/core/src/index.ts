// `@durable/core`: what an application writes. Store authors take `@durable/core/store`, runner
// packages `@durable/core/runner`; each entry re-exports, so a class is one class everywhere.
// Every name here is listed in test/entries.test.ts: a new one is a choice someone made.
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  RecoveryNeedsDecision,
  IdentityMismatch,
  InvalidInput,
  InvalidToolArgs,
  UnrecordableResult,
  ApprovalDenied,
  StoreUnavailable,
  StoreNotReady,
  LeaseHeld,
  RunAlreadyEnded,
  QueueFull,
  StreamTooLong,
  RunFailed,
  ResultTimedOut,
  ToolFailed,
  ToolTimedOut,
  NonRetryable,
  VersionNotServed,
  PatchRemoved,
  type DurableErrorCode,
  type InDoubtCall,
} from "./base/errors.js";
export { ToolRegistry, type ToolFn, type ToolOptions, type ToolContext } from "./calls/tools.js";
export type { RetryPolicy } from "./calls/retry.js";
export { Executor, type ExecutorOptions } from "./calls/executor.js";
export type { ApprovalAnswer, ApprovalAnswers, ApprovalPort, ApprovalRequest } from "./calls/approvals.js";
export { idempotencyKey } from "./calls/idempotency.js";
export { approveRun, decideInDoubt, retryRun, cancelRun, wakeRun, migrateRun } from "./operator/actions.js";
export { runsByVersion } from "./operator/run-versions.js";
export type { RunVersion } from "./run/versions.js";
export { forkRun, type ForkOptions, type ForkedRun } from "./operator/fork-run.js";
export { RunHandle, runHandle, type RunHandleOptions, type RunHandleStatus } from "./operator/run-handle.js";
export { pruneRuns, type PruneOptions } from "./operator/prune.js";
export { sendEvent, type SendEventOptions } from "./operator/send-event.js";
export { followRun, type FollowOptions, type FollowedPart } from "./operator/follow-run.js";
export type { StreamOptions } from "./log/run-stream.js";
export type { SentEvent } from "./log/inbox.js";
export type { OperatorOptions } from "./operator/options.js";
export type { InDoubtDecision, InDoubtDecisions } from "./run/in-doubt-decisions.js";
export type { DurableEvent, EventOf, EventSink } from "./log/events.js";
export { jsonlEventSink, readJsonlEvents } from "./log/jsonl-events.js";
export type { PausedResult, RecoverOptions } from "./driver/program.js";
export type { PendingCall } from "./calls/replay.js";
export { RunWorker, startWorker, type WorkerStatus } from "./driver/worker.js";
export { drain, type DrainOptions, type DrainResult } from "./driver/drain.js";
export { defineQueue, type Queue, type QueueOptions } from "./driver/queue.js";
export type { WorkerOptions } from "./driver/worker-options.js";
export type { WorkerLogger } from "./driver/worker-log.js";
export { Schedule, type ScheduleOptions } from "./driver/schedule.js";
export { workerId, type LeaseOptions } from "./run/lease.js";
export { MemoryCheckpointStore } from "./store/memory-store.js";
export type { CheckpointStore } from "./store/contract.js";
export type { StorageOptions } from "./run/storage.js";
export type { CheckpointKeys, EncryptionKeys } from "./seal/sealer.js";
export type { Identity } from "./base/identity.js";
export { newRunId } from "./base/names.js";
export type { JsonValue } from "./base/json.js";
export type { ValueCodec } from "./base/codec.js";
