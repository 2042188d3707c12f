import type { LanguageModelUsage, ModelMessage } from "ai";
import type { JsonObject } from "@durable/core/runner";
import type { ModelReply } from "../model.js";
import type { ModelUsage } from "../usage.js";
import { fromModelMessages } from "./messages.js";

/** What `generateText` and `streamText` tell of one step, once it is done. */
export interface StepOutput {
  readonly response: {
    readonly messages: readonly ModelMessage[];
    readonly id: string;
    readonly modelId: string;
    readonly timestamp: Date;
  };
  readonly usage: LanguageModelUsage;
  readonly finishReason: string;
}

/**
 * The loop's reply for one AI SDK step: the assistant message of its response
 * as the history keeps it (every part, with its provider metadata), its
 * tool calls unexecuted, usage, finish reason and response metadata.
 */
export function replyOf(step: StepOutput): ModelReply {
  const said = step.response.messages.filter((message) => message.role === "assistant");
  const [message] = fromModelMessages(said.length === 0 ? [{ role: "assistant", content: [] }] : said.slice(0, 1));
  const { id, modelId, timestamp } = step.response;
  const response: JsonObject = { id, modelId, timestamp: timestamp.toISOString() };
  return {
    text: message?.content ?? "",
    toolCalls: message?.role === "assistant" ? (message.toolCalls ?? []) : [],
    ...(message?.parts === undefined ? {} : { parts: message.parts }),
    ...(message?.providerOptions === undefined ? {} : { providerOptions: message.providerOptions }),
    usage: usageOf(step.usage),
    finishReason: step.finishReason,
    response,
  };
}

/** The AI SDK's usage as the loop keeps it (both majors' fields). */
function usageOf(usage: LanguageModelUsage): ModelUsage {
  const given = usage as LanguageModelUsage & { reasoningTokens?: number; cachedInputTokens?: number };
  const fields: ModelUsage = {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    totalTokens: usage.totalTokens,
    reasoningTokens: usage.outputTokenDetails?.reasoningTokens ?? given.reasoningTokens,
    cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens ?? given.cachedInputTokens,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
