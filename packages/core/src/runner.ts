// `@durable/core/runner`: what a runner package (flow, loop, a third party's) builds on. It takes
// the application's names (tools, executor, events, errors) from `@durable/core`.
export { DurableRun, type RunStart, type ClaimOptions } from "./run.js";
export { leaseTerms, LeaseKeeper } from "./lease.js";
export { eachConcurrently, type Settled } from "./concurrent.js";
export { CallScope, bindDecisions, type CallScopeInit, type CallOutcome, type BoundDecision } from "./executor.js";
export {
  classifyCalls,
  planReplay,
  freshPlan,
  type Classification,
  type ReplayPlan,
  type FinishedCall,
  type FinishedOutcome,
} from "./replay.js";
export {
  CallLog,
  readCallLog,
  isSegmentCounts,
  type CallRecord,
  type CallRecordKind,
  type CallEntry,
  type SegmentCounts,
} from "./call-log.js";
export { Sealer, type SealPurpose, type SealedColumns } from "./seal.js";
export { runStorage } from "./run-storage.js";
export { AnchoredStore, anchoredStore } from "./anchored-store.js";
export { sealerFor, sealCheckpoint, openCheckpoint, type CheckpointBody } from "./checkpoint.js";
export { canonicalJson, canonicalCopy, assertJson } from "./canonical.js";
export { PLAIN_JSON, encodeValue, encodedText, decodeValue } from "./codec.js";
export { isStandardSchema, validated, validateWith } from "./standard-schema.js";
export { callIdOf } from "./call-id.js";
export { idempotencyKeyFor } from "./idempotency.js";
export { identityOf, resumeIdentity } from "./identity.js";
export { assertRunId, assertRunName, assertStorableText, MAX_RUN_ID_LENGTH, MAX_NAME_LENGTH } from "./run-id.js";
export { emit, type EventInput } from "./events.js";
export { leavesRunForRecovery, errorText, MAX_ERROR_TEXT } from "./errors.js";
export {
  checkRunnerOptions,
  checkExecutor,
  checkRegistry,
  checkOptionTypes,
  describeType,
  type OptionType,
} from "./options.js";
export {
  faultPoint,
  parseFaultPoint,
  FAULT_POINTS,
  FAULT_POINT_VARIABLE,
  type FaultPoint,
  type ArmedFaultPoint,
} from "./fault-points.js";
export { RunDriver } from "./driver.js";
export type { RunProgram, StepOutcome, StepContext, DriverOptions, OpenedRun } from "./run-program.js";
export { readEnvelope, envelopeJson, type RunEnvelope } from "./envelope.js";
export { isJsonObject, isString, isCount, isArrayOf, isRecordOf } from "./json-guards.js";
