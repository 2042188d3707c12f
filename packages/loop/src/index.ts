export { runToolLoop, recoverToolLoop, type LoopResult, type ToolLoopOptions, type LoopStoreOptions } from "./tool-loop.js";
export type { LoopModel, Message, ModelReply, ToolCallRequest, ToolSpec } from "./model.js";
export type { LoopApproval, LoopData } from "./loop-data.js";
