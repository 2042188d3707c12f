export {
  runToolLoop,
  recoverToolLoop,
  retryToolLoop,
  cancelToolLoop,
  recoverAllToolLoops,
  servedToolLoops,
  type LoopResult,
  type LoopDone,
  type ToolLoopOptions,
  type LoopStoreOptions,
} from "./tool-loop.js";
export type { LoopModel, Message, ModelReply, ToolCallRequest, ToolSpec } from "./model.js";
export type { LoopData } from "./loop-data.js";
export type { Decisions, PendingCall, PausedResult } from "@durable/core";
