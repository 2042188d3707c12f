export { canonicalJson, canonicalCopy, assertJson, type JsonValue, type JsonObject } from "./canonical.js";
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  RecoveryNeedsDecision,
  FlowError,
  IdentityMismatch,
  InvalidInput,
  UnrecordableResult,
  ApprovalDenied,
  StoreUnavailable,
  StoreNotReady,
  leavesRunForRecovery,
  errorText,
  MAX_ERROR_TEXT,
  type DurableErrorCode,
  type InDoubtReason,
  type InDoubtCall,
} from "./errors.js";
export { Sealer, type CheckpointKey, type CheckpointKeys, type SealPurpose } from "./seal.js";
export {
  isEnded,
  UNFINISHED,
  type CheckpointStore,
  type CheckpointRow,
  type StoredCheckpoint,
  type StoredCall,
  type RunKind,
  type RunStatus,
} from "./store.js";
export { sealerFor, sealCheckpoint, openCheckpoint, type CheckpointBody } from "./checkpoint.js";
export { CallLog, readCallLog, isSegmentCounts, type CallRecord, type CallRecordKind, type CallEntry, type SegmentCounts } from "./call-log.js";
export {
  classifyCalls,
  planReplay,
  freshPlan,
  type Classification,
  type ReplayPlan,
  type FinishedCall,
  type FinishedOutcome,
  type PendingCall,
} from "./replay.js";
export { ToolRegistry, type ToolFn, type ToolOptions, type ToolDefinition, type ToolContext } from "./tools.js";
export {
  Executor,
  CallScope,
  bindDecisions,
  type Decisions,
  type CallOutcome,
  type CallScopeInit,
  type ExecutorOptions,
  type ApprovalDecision,
  type BoundDecision,
  type ApprovalPort,
  type ApprovalRequest,
} from "./executor.js";
export { idempotencyKey, idempotencyKeyFor } from "./idempotency.js";
export { callIdOf } from "./call-id.js";
export { identityOf, resumeIdentity, type Identity } from "./identity.js";
export { newRunId, assertRunId, assertRunName, assertStorableText, MAX_RUN_ID_LENGTH, MAX_NAME_LENGTH } from "./run-id.js";
export { DurableRun, type RunStart } from "./run.js";
export {
  RunDriver,
  type RunProgram,
  type StepOutcome,
  type StepContext,
  type DriverOptions,
  type RecoverOptions,
  type OpenedRun,
  type PausedResult,
} from "./driver.js";
export { readEnvelope, envelopeJson, type RunEnvelope } from "./envelope.js";
export { isJsonObject, isString, isCount, isArrayOf, isRecordOf } from "./json-guards.js";
export {
  emit,
  type DurableEvent,
  type EventSink,
  type EventInput,
  type CallRef,
  type LoopStage,
  type CheckpointSaved,
  type RunRecovered,
  type RunNeedsDecision,
  type CallStarted,
  type CallDone,
  type CallFailed,
  type RunPaused,
  type RunEnded,
} from "./events.js";
export { jsonlEventSink, readJsonlEvents } from "./event-log.js";
export { faultPoint, parseFaultPoint, FAULT_POINTS, FAULT_POINT_VARIABLE, type FaultPoint, type ArmedFaultPoint } from "./fault-points.js";
export { checkRunnerOptions, checkExecutor, checkRegistry, checkOptionTypes, describeType, type OptionType } from "./options.js";
export { saveRefusal, recordRefusal, type RunHead } from "./protocol.js";
export { MemoryCheckpointStore, type MemoryData, type MemoryRun, type MemoryStoreOptions } from "./memory-store.js";
