import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { ToolRegistry } from "@durable/core";
import { MemoryCheckpointStore } from "../../store-memory/src/index.js";
import { recoverToolLoop, runToolLoop } from "../src/index.js";
import { aiSdkModel } from "../src/ai-sdk.js";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

describe("aiSdkModel", () => {
  it("drives a durable loop with an AI SDK language model: tool specs out, tool calls and results in", async () => {
    const prompts: unknown[] = [];
    const replies = [
      { content: [{ type: "tool-call" as const, toolCallId: "call-1", toolName: "hold_seats", input: JSON.stringify({ seats: 2 }) }], finishReason: { unified: "tool-calls" as const, raw: undefined } },
      { content: [{ type: "text" as const, text: "Two seats held." }], finishReason: { unified: "stop" as const, raw: undefined } },
    ];
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        prompts.push({ prompt: options.prompt, tools: options.tools });
        return { ...replies[prompts.length - 1]!, usage, warnings: [] };
      },
    });
    const registry = new ToolRegistry().tool("hold_seats", (a: { seats: number }) => ({ held: a.seats }), {
      description: "Holds seats",
      parameters: { type: "object", properties: { seats: { type: "integer" } }, required: ["seats"] },
    });
    const store = new MemoryCheckpointStore();
    const result = await runToolLoop(aiSdkModel(model), registry, [{ role: "user", content: "Two seats please" }], { runId: "chat", checkpoints: store });
    expect(result).toMatchObject({ status: "done", text: "Two seats held." });
    expect(prompts[0]).toMatchObject({ tools: [{ type: "function", name: "hold_seats", description: "Holds seats" }] });
    // The second call sees the tool call and its result as the AI SDK's messages.
    expect(JSON.stringify(prompts[1])).toContain('"toolCallId":"call-1"');
    expect(JSON.stringify(prompts[1])).toContain('{\\"held\\":2}');
    await expect(recoverToolLoop(aiSdkModel(model), registry, "chat", { checkpoints: store })).rejects.toThrow(/ended/);
  });
});
