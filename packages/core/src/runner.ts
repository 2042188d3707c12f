// `@durable/core/runner`: what a runner package (flow, loop, a third party's) builds on. It takes
// the application's names (tools, executor, events, errors) from `@durable/core`.
export { DurableRun, type RunStart, type ClaimOptions } from "./run/durable-run.js";
export { leaseTerms, LeaseKeeper } from "./run/lease.js";
export { eachConcurrently, type Settled } from "./base/concurrent.js";
export { CallScope, type CallScopeInit, type CallOutcome, type RoundWait } from "./calls/call-scope.js";
export type { EventWait, WaitOptions } from "./calls/event-wait.js";
export { childRunId, type ChildStart, type ChildEnd, type ParentRef } from "./calls/child-runs.js";
export { SLEEP_TOOL, EVENT_TOOL, CHILD_TOOL, PATCH_TOOL } from "./calls/tools.js";
export { checkPatchesAsked } from "./calls/patches.js";
export { bindAnswers, type BoundAnswer } from "./calls/approvals.js";
export {
  classifyCalls,
  planReplay,
  freshPlan,
  type Classification,
  type ReplayPlan,
  type FinishedCall,
  type FinishedOutcome,
} from "./calls/replay.js";
export {
  CallLog,
  readCallLog,
  type CallRecord,
  type CallRecordKind,
  type CallEntry,
} from "./log/call-log.js";
export { isSegmentCounts, type SegmentCounts } from "./store/contract.js";
export { readInbox, sealEvent, eventStore, assertEventName, type InboxEvent, type EventStore } from "./log/inbox.js";
export { MAX_SLEEP_MS } from "./calls/tools.js";
export { streamTerms, StreamWriter, type StreamTerms } from "./log/run-stream.js";
export { streamStore, openStreamBatch, type StreamStore, type StreamPart } from "./log/stream-read.js";
export { Sealer, type SealPurpose, type SealedColumns } from "./seal/sealer.js";
export { runStorage } from "./run/storage.js";
export { AnchoredStore, anchoredStore } from "./store/anchored-store.js";
export {
  sealerFor,
  sealCheckpoint,
  openCheckpoint,
  type CheckpointBody,
  type ChainLink,
  type OpenedCheckpoint,
} from "./seal/checkpoint.js";
export { openHistory, readLatest } from "./seal/chain.js";
export { deepFreeze } from "./base/freeze.js";
export { canonicalJson, canonicalCopy, assertJson } from "./base/canonical.js";
export { PLAIN_JSON, encodeValue, encodedText, decodeValue } from "./base/codec.js";
export { isStandardSchema, validated, validateWith } from "./base/standard-schema.js";
export { callIdOf } from "./calls/call-id.js";
export { idempotencyKeyFor } from "./calls/idempotency.js";
export { identityOf, resumeIdentity } from "./base/identity.js";
export { assertRunId, assertRunName, assertStorableText, MAX_RUN_ID_LENGTH, MAX_NAME_LENGTH } from "./base/names.js";
export { emit, type EventInput } from "./log/events.js";
export { leavesRunForRecovery, errorText, MAX_ERROR_TEXT } from "./base/errors.js";
export {
  checkOptions,
  unknownOption,
  describeType,
  type OptionCheck,
  type OptionTable,
  type OptionType,
} from "./base/option-checks.js";
export {
  checkRunnerOptions,
  driverOptions,
  RUNNER_OPTIONS,
  RECOVER_OPTIONS,
  RECOVER_EACH_OPTIONS,
  type RunnerOptions,
} from "./driver/runner-options.js";
export { checkExecutor, checkRegistry } from "./calls/executor.js";
export { RunDriver } from "./driver/run-driver.js";
export { inSpan, runAttributes, type RunAttributes, type RunTrace } from "./telemetry/tracing.js";
export type {
  RunProgram,
  StepOutcome,
  SteppedData,
  StepContext,
  DriverOptions,
  OpenedRun,
  ClaimLanded,
} from "./driver/program.js";
export { readEnvelope, envelopeJson, type RunEnvelope, type ForkedFrom } from "./run/envelope.js";
export { checkRunVersion } from "./run/versions.js";
export { versionCounts, type VersionRuns } from "./operator/run-versions.js";
export { isJsonObject, isString, isCount, isArrayOf, isRecordOf } from "./base/json.js";
export type {
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
  RunAsleep,
  RunEnded,
} from "./log/events.js";
export type { AsleepResult, RecoverEachOptions, Recovered, ServedRuns } from "./driver/program.js";
export type { ScheduleTarget } from "./driver/schedule.js";
export type { JsonObject } from "./base/json.js";
export { operatorMark } from "./operator/actions.js";
export type { OperatorAction, OperatorMark } from "./operator/options.js";
export { eventOfLine } from "./log/jsonl-events.js";
export { queuePlace, type QueueStart } from "./driver/queue.js";
