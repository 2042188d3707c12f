import * as aiTest from "ai/test";
import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { recoverToolLoop, runToolLoop, type Message } from "../src/index.js";
import { aiSdkModel } from "../src/ai-sdk.js";

// This file runs once per AI SDK major (vitest.config.ts: the "ai 6" project
// resolves `ai` to the ai-v6 alias). Each major is driven with the mock of the
// model interface its providers implement: LanguageModelV4 in 7, V3 in 6.
const mocks = aiTest as unknown as Record<
  string,
  new (options: {
    doGenerate: (options: CallOptions) => Promise<unknown>;
  }) => object
>;
const major = mocks["MockLanguageModelV4"] === undefined ? 6 : 7;
const MockModel = mocks["MockLanguageModelV4"] ?? mocks["MockLanguageModelV3"]!;

interface CallOptions {
  readonly prompt: unknown;
  readonly tools?: unknown;
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const said = (text: string) => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: [],
});

/** A mock model answering from `replies` in turn, keeping what it was sent. */
function scripted(replies: readonly object[]) {
  const prompts: CallOptions[] = [];
  const model = new MockModel({
    doGenerate: async (options) => {
      prompts.push({ prompt: options.prompt, tools: options.tools });
      return { usage, warnings: [], ...replies[prompts.length - 1] };
    },
  });
  return { model: model as Parameters<typeof aiSdkModel>[0], prompts };
}

describe(`aiSdkModel with AI SDK ${major}`, () => {
  it("runs against the AI SDK major this project is for", () => {
    expect(String(major)).toBe(process.env["AI_SDK_MAJOR"] ?? "7");
  });

  it("drives a durable loop with an AI SDK language model: tool specs out, tool calls and results in", async () => {
    const { model, prompts } = scripted([
      {
        content: [
          { type: "tool-call", toolCallId: "call-1", toolName: "hold_seats", input: JSON.stringify({ seats: 2 }) },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
      },
      said("Two seats held."),
    ]);
    const registry = new ToolRegistry().tool("hold_seats", (a: { seats: number }) => ({ held: a.seats }), {
      description: "Holds seats",
      parameters: { type: "object", properties: { seats: { type: "integer" } }, required: ["seats"] },
    });
    const store = new MemoryCheckpointStore();
    const result = await runToolLoop(aiSdkModel(model), registry, [{ role: "user", content: "Two seats please" }], {
      runId: "chat",
      checkpoints: store,
    });
    expect(result).toMatchObject({ status: "done", text: "Two seats held." });
    expect(prompts[0]).toMatchObject({ tools: [{ type: "function", name: "hold_seats", description: "Holds seats" }] });
    // The second call sees the tool call and its result as the AI SDK's messages: a JSON result as JSON.
    expect(JSON.stringify(prompts[1])).toContain('"toolCallId":"call-1"');
    expect(JSON.stringify(prompts[1])).toContain('"output":{"type":"json","value":{"held":2}}');
    await expect(recoverToolLoop(aiSdkModel(model), registry, "chat", { checkpoints: store })).rejects.toThrow(/ended/);
  });

  it("sends a tool's error as an error result the model can read", async () => {
    const { model, prompts } = scripted([
      {
        content: [
          { type: "tool-call", toolCallId: "call-1", toolName: "hold_seats", input: JSON.stringify({ seats: 2 }) },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
      },
      said("No seats, sorry."),
    ]);
    const registry = new ToolRegistry().tool("hold_seats", () => {
      throw new Error("sold out");
    });
    const result = await runToolLoop(aiSdkModel(model), registry, [{ role: "user", content: "Two seats please" }], {
      checkpoints: new MemoryCheckpointStore(),
    });
    expect(result).toMatchObject({ status: "done", text: "No seats, sorry." });
    expect(JSON.stringify(prompts[1])).toContain('"output":{"type":"error-text","value":"error: Error: sold out"}');
  });

  it("sends a system message of the loop's history in place, and the system setting before it", async () => {
    const { model, prompts } = scripted([said("Hello.")]);
    const history: Message[] = [
      { role: "system", content: "Answer in one word." },
      { role: "user", content: "Hi" },
    ];
    const result = await runToolLoop(
      aiSdkModel(model, { system: "You sell theatre tickets." }),
      new ToolRegistry(),
      history,
      {
        checkpoints: new MemoryCheckpointStore(),
      },
    );
    expect(result).toMatchObject({ status: "done", text: "Hello." });
    expect(prompts[0]?.prompt).toMatchObject([
      { role: "system", content: "You sell theatre tickets." },
      { role: "system", content: "Answer in one word." },
      { role: "user", content: [{ type: "text", text: "Hi" }] },
    ]);
  });
});
