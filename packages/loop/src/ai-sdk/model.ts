import { generateText, jsonSchema, streamText, tool, type LanguageModel, type ToolSet } from "ai";
import type { LoopModel, ModelStreamPart, ReplyOptions, ToolSpec } from "../model.js";
import { toModelMessages } from "./messages.js";
import { replyOf, type StepOutput } from "./reply.js";

type GenerateOptions = Parameters<typeof generateText>[0];

/**
 * What the loop sets itself, per model call: the model, the history, the
 * tools (their specs, without `execute`: the loop runs them), and when to
 * stop (`maxSteps`, `stopWhen` of the loop's options; each call is one step).
 */
type LoopOwned =
  | "model"
  | "tools"
  | "prompt"
  | "messages"
  | "stopWhen"
  | "prepareStep"
  | "experimental_prepareStep"
  | "allowSystemInMessages";

/**
 * Settings passed on to every `generateText` (or, when the loop streams,
 * `streamText`) call as they are: `system`/`instructions`, `temperature`,
 * `maxOutputTokens`, `providerOptions`, `toolChoice`, `activeTools`,
 * `headers`, `maxRetries`, `abortSignal`, `seed`, … (whatever the installed
 * AI SDK takes, less what the loop sets itself).
 */
export type AiSdkSettings = Omit<GenerateOptions, LoopOwned>;

/**
 * Adapts an AI SDK 6 or 7 language model (`openai("gpt-4.1")`, `anthropic(…)`,
 * …) to the loop's model interface. Each reply is one `generateText` step
 * (`streamText` when the loop streams) whose tool calls come back unexecuted:
 * the durable loop runs them through the call log. The reply keeps every part
 * the provider returned (reasoning, signatures, provider metadata), its
 * usage, finish reason and response metadata.
 */
export function aiSdkModel(model: LanguageModel, settings: AiSdkSettings = {} as AiSdkSettings): LoopModel {
  return {
    async reply(messages, tools, options = {}) {
      const call = {
        ...settings,
        model,
        // The history is the app's own (the model's replies are "assistant", tool
        // output is "tool"), so its system messages stay in place; AI SDK 7 refuses
        // them in `messages` unless this is set, AI SDK 6 warns.
        allowSystemInMessages: true,
        messages: toModelMessages(messages),
        tools: toToolSet(tools),
        ...abortSignal(settings.abortSignal, options.signal),
      } as GenerateOptions;
      if (options.onPart === undefined) return replyOf((await generateText(call)) as StepOutput);
      return streamed(call, options.onPart);
    },
  };
}

function abortSignal(own: AbortSignal | undefined, loop: ReplyOptions["signal"]): { abortSignal?: AbortSignal } {
  const signals = [own, loop].filter((signal) => signal !== undefined);
  return signals.length === 0 ? {} : { abortSignal: AbortSignal.any(signals) };
}

/** One `streamText` step: its parts to `onPart` as they arrive, then the reply as `generateText` would give it. */
async function streamed(call: GenerateOptions, onPart: (part: ModelStreamPart) => void) {
  // The same settings: streamText takes what generateText does (its callbacks get its own events).
  // Its errors are thrown from here (the `error` part), not logged by the AI SDK's default handler.
  const result = streamText({ onError: () => undefined, ...call } as Parameters<typeof streamText>[0]);
  for await (const part of result.fullStream) {
    switch (part.type) {
      case "text-delta":
        onPart({ type: "text-delta", text: part.text });
        break;
      case "reasoning-delta":
        onPart({ type: "reasoning-delta", text: part.text });
        break;
      case "tool-call":
        onPart({ type: "tool-call", toolCallId: part.toolCallId, toolName: part.toolName, args: part.input });
        break;
      case "error":
        throw part.error;
    }
  }
  const [response, usage, finishReason] = await Promise.all([result.response, result.usage, result.finishReason]);
  return replyOf({ response, usage, finishReason } as StepOutput);
}

function toToolSet(tools: readonly ToolSpec[]): ToolSet {
  return Object.fromEntries(
    tools.map((spec) => [
      spec.name,
      tool({
        ...(spec.description === undefined ? {} : { description: spec.description }),
        inputSchema: jsonSchema(spec.parameters ?? { type: "object", additionalProperties: true }),
      }),
    ]),
  );
}
