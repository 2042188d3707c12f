import { generateText, jsonSchema, tool, type LanguageModel, type ModelMessage, type ToolSet } from "ai";
import type { JsonValue } from "@durable/core";
import type { LoopModel, Message, ToolSpec } from "./model.js";

/** Settings passed on to `generateText` for every model call. */
export interface AiSdkSettings {
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  readonly system?: string;
}

/**
 * Adapts an AI SDK 6 or 7 language model (`openai("gpt-4.1")`, `anthropic(…)`,
 * …) to the loop's model interface. Each reply is one `generateText` step whose
 * tool calls come back unexecuted: the durable loop runs them through the call log.
 * Only what both majors have is used: `generateText`, `tool`, `jsonSchema`.
 */
export function aiSdkModel(model: LanguageModel, settings: AiSdkSettings = {}): LoopModel {
  return {
    async reply(messages, tools) {
      const result = await generateText({
        model,
        ...settings,
        // The history is the app's own (the model's replies are "assistant", tool
        // output is "tool"), so its system messages stay in place; AI SDK 7 refuses
        // them in `messages` unless this is set, AI SDK 6 warns.
        allowSystemInMessages: true,
        messages: messages.map(toModelMessage),
        tools: toToolSet(tools),
      });
      return {
        text: result.text,
        toolCalls: result.toolCalls.map((call) => ({
          id: call.toolCallId,
          name: call.toolName,
          args: call.input as JsonValue,
        })),
      };
    },
  };
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

function toModelMessage(message: Message): ModelMessage {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant":
      return {
        role: "assistant",
        content: [
          ...(message.content === "" ? [] : [{ type: "text" as const, text: message.content }]),
          ...(message.toolCalls ?? []).map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.id,
            toolName: call.name,
            input: call.args,
          })),
        ],
      };
    case "tool": {
      // A tool's error (`isError`) reaches the model as an error result, as the AI SDK gives a tool's own errors.
      const output = {
        type: message.isError === true ? ("error-text" as const) : ("text" as const),
        value: message.content,
      };
      return {
        role: "tool",
        content: [{ type: "tool-result", toolCallId: message.toolCallId, toolName: message.name, output }],
      };
    }
  }
}
