export { aiSdkModel, type AiSdkSettings } from "./ai-sdk/model.js";
export { durableTools, durable, type DurableTool, type DurableToolOptions } from "./ai-sdk/tools.js";
export { fromModelMessages, toModelMessages } from "./ai-sdk/messages.js";
export { toUIMessageStream, type DurableRunData } from "./ai-sdk/ui-stream.js";
