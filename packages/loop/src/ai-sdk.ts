export { aiSdkModel, type AiSdkSettings } from "./ai-sdk/model.js";
export { durableTools, durable, type DurableTool, type DurableToolOptions } from "./ai-sdk/tools.js";
export { fromModelMessages, toModelMessages } from "./ai-sdk/messages.js";
export { toUIMessageStream } from "./ai-sdk/ui-stream.js";
export { followUIMessageStream } from "./ai-sdk/follow-ui-stream.js";
export { resumeStreamResponse, type ResumeStreamOptions } from "./ai-sdk/resume-response.js";
export type { DurableRunData, DurableToolData, UIChunk } from "./ai-sdk/ui-chunks.js";
