import { createUIMessageStreamResponse, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MemoryCheckpointStore } from "@durable/core";
import { streamToolLoop, type LoopStreamPart } from "../src/index.js";
import { aiSdkModel, durableTools, toUIMessageStream } from "../src/ai-sdk.js";
import { finish, major, streamedText, streaming, usage } from "./ai-mocks.js";

const ask = [{ role: "user" as const, content: "Two seats" }];

/** A streamed reply that thinks, then calls hold_seats. */
const thinkThenCall = [
  { type: "stream-start", warnings: [] },
  { type: "reasoning-start", id: "r" },
  { type: "reasoning-delta", id: "r", delta: "They want " },
  { type: "reasoning-delta", id: "r", delta: "two." },
  { type: "reasoning-end", id: "r", providerMetadata: { anthropic: { signature: "sig" } } },
  { type: "tool-call", toolCallId: "c1", toolName: "hold_seats", input: '{"seats":2}' },
  { type: "finish", finishReason: finish("tool-calls"), usage: usage(5, 2) },
];

const tools = {
  hold_seats: tool({
    description: "Holds seats",
    inputSchema: z.object({ seats: z.number() }),
    execute: async ({ seats }) => ({ held: seats }),
  }),
};

async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

describe(`streamToolLoop with AI SDK ${major}`, () => {
  it("streams reasoning, tool calls, tool results and text as they arrive, and saves each reply whole", async () => {
    const { model, prompts } = streaming([thinkThenCall, streamedText("Two ", "seats ", "held.")]);
    const stream = streamToolLoop(aiSdkModel(model), durableTools(tools), ask, {
      runId: "s1",
      checkpoints: new MemoryCheckpointStore(),
    });
    const parts = await collect(stream);
    const kinds = parts.map((part) => part.type);
    expect(kinds).toEqual([
      "run-start",
      "step-start",
      "reasoning-delta",
      "reasoning-delta",
      "tool-call",
      "step-finish",
      "tool-result",
      "step-start",
      "text-delta",
      "text-delta",
      "text-delta",
      "step-finish",
    ]);
    expect(parts[0]).toEqual({ type: "run-start", runId: "s1", recovered: false, messages: ask });
    expect(parts[4]).toEqual({ type: "tool-call", toolCallId: "c1", toolName: "hold_seats", args: { seats: 2 } });
    expect(parts[6]).toMatchObject({ type: "tool-result", message: { toolCallId: "c1", result: { held: 2 } } });
    const result = await stream.result;
    expect(result).toMatchObject({
      status: "done",
      text: "Two seats held.",
      usage: { inputTokens: 8, outputTokens: 5 },
    });
    // The streamed reasoning is kept with its signature and sent back with the next call.
    expect(JSON.stringify(prompts[1]?.prompt)).toContain('"signature":"sig"');
  });

  it("gives the AI SDK's UI message stream, which a route returns with createUIMessageStreamResponse", async () => {
    const { model } = streaming([thinkThenCall, streamedText("Held.")]);
    const stream = streamToolLoop(aiSdkModel(model), durableTools(tools), ask, {
      runId: "s2",
      checkpoints: new MemoryCheckpointStore(),
    });
    const chunks = await collect(toUIMessageStream(stream));
    expect(chunks).toEqual([
      { type: "start" },
      { type: "data-durable", data: { runId: "s2", recovered: false, messages: 1 } },
      { type: "start-step" },
      { type: "reasoning-start", id: "reasoning-1" },
      { type: "reasoning-delta", id: "reasoning-1", delta: "They want " },
      { type: "reasoning-delta", id: "reasoning-1", delta: "two." },
      { type: "reasoning-end", id: "reasoning-1" },
      { type: "tool-input-available", toolCallId: "c1", toolName: "hold_seats", input: { seats: 2 } },
      { type: "tool-output-available", toolCallId: "c1", output: { held: 2 } },
      { type: "finish-step" },
      { type: "start-step" },
      { type: "text-start", id: "text-2" },
      { type: "text-delta", id: "text-2", delta: "Held." },
      { type: "text-end", id: "text-2" },
      { type: "finish-step" },
      { type: "finish" },
    ]);
    const again = streaming([streamedText("Hi.")]);
    const response = createUIMessageStreamResponse({
      stream: toUIMessageStream(
        streamToolLoop(aiSdkModel(again.model), durableTools(tools), ask, { checkpoints: new MemoryCheckpointStore() }),
      ),
    });
    expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
    const body = await response.text();
    expect(body).toContain('"type":"text-delta"');
    expect(body).toContain('"delta":"Hi."');
  });

  it("ends the stream with the error that failed the run, after the parts before it", async () => {
    const { model } = streaming([
      [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hel" },
        { type: "error", error: new Error("the connection dropped") },
      ],
    ]);
    const stream = streamToolLoop(aiSdkModel(model, { maxRetries: 0 }), durableTools(tools), ask, {
      checkpoints: new MemoryCheckpointStore(),
    });
    const seen: LoopStreamPart[] = [];
    await expect(
      (async () => {
        for await (const part of stream) seen.push(part);
      })(),
    ).rejects.toThrow(/connection dropped/);
    expect(seen.map((part) => part.type)).toEqual(["run-start", "step-start", "text-delta"]);
    await expect(stream.result).rejects.toThrow(/connection dropped/);
    const { model: failing } = streaming([[{ type: "error", error: new Error("down") }]]);
    const chunks = await collect(
      toUIMessageStream(
        streamToolLoop(aiSdkModel(failing, { maxRetries: 0 }), durableTools(tools), ask, {
          checkpoints: new MemoryCheckpointStore(),
        }),
      ),
    );
    expect(chunks.at(-1)).toMatchObject({ type: "error", errorText: expect.stringContaining("down") });
  });
});
