export {
  runToolLoop,
  recoverToolLoop,
  retryToolLoop,
  cancelToolLoop,
  recoverAllToolLoops,
  servedToolLoops,
} from "./tool-loop.js";
export { startToolLoop, toolLoopHandle } from "./start-tool-loop.js";
export type {
  ToolLoopOptions,
  StartToolLoopOptions,
  LoopStoreOptions,
  RecoverToolLoopOptions,
  RecoverAllToolLoopsOptions,
} from "./loop-options.js";
export type { EventToolOptions } from "./event-tool.js";
export { readToolLoop, type LoopSnapshot } from "./read-tool-loop.js";
export { streamToolLoop, streamRecoveredToolLoop, type LoopStream } from "./stream-tool-loop.js";
export {
  followToolLoop,
  type FollowToolLoopOptions,
  type LoopFollowedPart,
  type LoopStreamRecord,
} from "./follow-tool-loop.js";
export type { LoopResult, LoopDone, LoopAwaitingUser, LoopStepResult } from "./loop-result.js";
export type { LoopStopCondition, StopStep } from "./loop-program.js";
export type { LoopStreamPart } from "./stream-parts.js";
export type { LoopModel, ModelReply, ModelStreamPart, ReplyOptions, ToolSpec } from "./model.js";
export type { Message, ToolCallRequest } from "./message.js";
export type { ModelUsage } from "./usage.js";
export { loopCallContext, type LoopCallContext } from "./call-context.js";
export type { LoopData, LoopStep, StopReason } from "./loop-data.js";
export type { ApprovalAnswers, PendingCall, PausedResult } from "@durable/core";
export type { AsleepResult } from "@durable/core/runner";
