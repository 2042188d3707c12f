import * as aiTest from "ai/test";
import type { aiSdkModel } from "../src/ai-sdk.js";

// The AI SDK adapter's tests run once per AI SDK major (vitest.config.ts: the
// "ai 6" project resolves `ai` to the ai-v6 alias). Each major is driven with
// the mock of the model interface its providers implement: LanguageModelV4 in
// 7, V3 in 6; both take the same results and stream parts used here.

/** What the mock model is called with (the provider's view of a call). */
export interface CallOptions {
  readonly prompt: unknown;
  readonly tools?: unknown;
  readonly toolChoice?: unknown;
  readonly providerOptions?: unknown;
  readonly headers?: unknown;
  readonly temperature?: unknown;
  readonly abortSignal?: AbortSignal;
}

type MockConstructor = new (options: {
  doGenerate?: (options: CallOptions) => Promise<unknown>;
  doStream?: (options: CallOptions) => Promise<unknown>;
}) => object;

const mocks = aiTest as unknown as Record<string, MockConstructor | undefined>;
export const major = mocks["MockLanguageModelV4"] === undefined ? 6 : 7;
const MockModel = (mocks["MockLanguageModelV4"] ?? mocks["MockLanguageModelV3"]) as MockConstructor;

export type AiModel = Parameters<typeof aiSdkModel>[0];

export const usage = (input = 1, output = 1) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

export const finish = (unified: "stop" | "tool-calls" | "length") => ({ unified, raw: undefined });

/** A reply that says `text`. */
export const said = (text: string) => ({ content: [{ type: "text", text }], finishReason: finish("stop") });

/** A reply that calls tools: [toolCallId, toolName, input] each. */
export const calls = (...made: [string, string, object][]) => ({
  content: made.map(([toolCallId, toolName, input]) => ({
    type: "tool-call",
    toolCallId,
    toolName,
    input: JSON.stringify(input),
  })),
  finishReason: finish("tool-calls"),
});

/** A mock model whose `method` answers each call with the next of `answers` (made by `answer`), keeping what it was sent. */
function recording<T>(method: "doGenerate" | "doStream", answers: readonly T[], answer: (given: T) => unknown) {
  const prompts: CallOptions[] = [];
  const model = new MockModel({
    [method]: async (options: CallOptions) => {
      prompts.push(options);
      const given = answers[prompts.length - 1];
      if (given === undefined)
        throw new Error(`the mock model has no ${method === "doGenerate" ? "reply" : "stream"} ${prompts.length}`);
      return answer(given);
    },
  });
  return { model: model as AiModel, prompts };
}

/** A mock model answering `generateText` from `replies` in turn, keeping what it was sent. */
export const scripted = (replies: readonly object[]) =>
  recording("doGenerate", replies, (reply) => ({ usage: usage(), warnings: [], ...reply }));

/** A mock model answering `streamText` with `streams` in turn (lists of provider stream parts). */
export const streaming = (streams: readonly (readonly object[])[]) =>
  recording("doStream", streams, (parts) => ({ stream: aiTest.convertArrayToReadableStream([...parts]) }));

/** The provider stream parts of a reply that says `text` in pieces. */
export function streamedText(...pieces: string[]): object[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-1", modelId: "mock-model", timestamp: new Date(0) },
    { type: "text-start", id: "t" },
    ...pieces.map((delta) => ({ type: "text-delta", id: "t", delta })),
    { type: "text-end", id: "t" },
    { type: "finish", finishReason: finish("stop"), usage: usage(3, pieces.length) },
  ];
}
