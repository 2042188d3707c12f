import { hasToolCall, stepCountIs } from "ai";
import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { retryToolLoop, runToolLoop } from "../src/index.js";
import { aiSdkModel } from "../src/ai-sdk.js";
import { calls, finish, major, said, scripted, usage } from "./ai-mocks.js";

const ask = [{ role: "user" as const, content: "Two seats" }];
const registry = () => new ToolRegistry().tool("hold", () => "held").tool("pay", () => "paid");

describe(`aiSdkModel settings and results with AI SDK ${major}`, () => {
  it("passes generateText's settings through to every model call", async () => {
    const { model, prompts } = scripted([calls(["c1", "hold", {}])]);
    const controller = new AbortController();
    await runToolLoop(
      aiSdkModel(model, {
        temperature: 0.25,
        providerOptions: { mock: { effort: "low" } },
        toolChoice: { type: "tool", toolName: "hold" },
        headers: { "x-trace": "t-1" },
        maxRetries: 0,
        abortSignal: controller.signal,
      }),
      registry(),
      ask,
      { checkpoints: new MemoryCheckpointStore(), maxSteps: 1 },
    );
    expect(prompts[0]).toMatchObject({
      temperature: 0.25,
      providerOptions: { mock: { effort: "low" } },
      toolChoice: { type: "tool", toolName: "hold" },
      headers: expect.objectContaining({ "x-trace": "t-1" }),
    });
    expect(prompts[0]?.abortSignal).toBeInstanceOf(AbortSignal);
  });

  it("returns usage per step and in total, the finish reason and the response metadata", async () => {
    const { model } = scripted([
      {
        ...calls(["c1", "hold", {}]),
        usage: usage(10, 2),
        response: { id: "r-1", modelId: "m-1", timestamp: new Date(1000) },
      },
      { ...said("Held."), usage: usage(20, 5), response: { id: "r-2", modelId: "m-1", timestamp: new Date(2000) } },
    ]);
    const result = await runToolLoop(aiSdkModel(model), registry(), ask, { checkpoints: new MemoryCheckpointStore() });
    if (result.status !== "done") throw new Error(result.status);
    expect(result.steps.map((step) => [step.usage, step.finishReason])).toEqual([
      [{ inputTokens: 10, outputTokens: 2, totalTokens: 12, reasoningTokens: 0, cachedInputTokens: 0 }, "tool-calls"],
      [{ inputTokens: 20, outputTokens: 5, totalTokens: 25, reasoningTokens: 0, cachedInputTokens: 0 }, "stop"],
    ]);
    expect(result.steps[0]).toMatchObject({
      toolCalls: [{ toolCallId: "c1", toolName: "hold", input: {} }],
      toolResults: [{ role: "tool", toolCallId: "c1", content: "held" }],
    });
    expect(result.usage).toEqual({
      inputTokens: 30,
      outputTokens: 7,
      totalTokens: 37,
      reasoningTokens: 0,
      cachedInputTokens: 0,
    });
    expect(result.finishReason).toBe("stop");
    expect(result.response).toEqual({ id: "r-2", modelId: "m-1", timestamp: "1970-01-01T00:00:02.000Z" });
  });

  it("counts the usage of every saved reply in total after the loop goes on from a checkpoint", async () => {
    const replies = [
      { ...calls(["c1", "hold", {}]), usage: usage(10, 2) },
      { ...said("Held."), usage: usage(20, 5) },
    ];
    const failing = scripted([replies[0] as object]);
    const store = new MemoryCheckpointStore();
    await expect(
      runToolLoop(aiSdkModel(failing.model, { maxRetries: 0 }), registry(), ask, { runId: "u", checkpoints: store }),
    ).rejects.toThrow(/no reply 2/);
    const { model } = scripted([replies[1] as object]);
    const result = await retryToolLoop(aiSdkModel(model), registry(), "u", { checkpoints: store });
    expect(result).toMatchObject({ status: "done", usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 } });
  });

  it("takes the AI SDK's stop conditions: stepCountIs and hasToolCall end the turn before the model is asked again", async () => {
    const looping = () =>
      scripted([calls(["c1", "hold", {}]), calls(["c2", "pay", {}]), calls(["c3", "hold", {}]), said("done")]);
    const byCount = looping();
    const counted = await runToolLoop(aiSdkModel(byCount.model), registry(), ask, {
      checkpoints: new MemoryCheckpointStore(),
      stopWhen: stepCountIs(2),
    });
    expect(counted).toMatchObject({ status: "done", stopped: "stop-condition", steps: [{}, {}] });
    expect(byCount.prompts).toHaveLength(2);
    const byCall = looping();
    const called = await runToolLoop(aiSdkModel(byCall.model), registry(), ask, {
      checkpoints: new MemoryCheckpointStore(),
      stopWhen: [hasToolCall("pay")],
    });
    expect(called).toMatchObject({ status: "done", stopped: "stop-condition" });
    expect(byCall.prompts).toHaveLength(2);
    expect(called.status === "done" && called.messages.at(-1)).toMatchObject({
      role: "tool",
      name: "pay",
      content: "paid",
    });
  });

  it("reports the finish reason the provider gave, e.g. a reply cut off at maxOutputTokens", async () => {
    const { model, prompts } = scripted([{ content: [{ type: "text", text: "Cut" }], finishReason: finish("length") }]);
    const result = await runToolLoop(aiSdkModel(model, { maxOutputTokens: 3 }), registry(), ask, {
      checkpoints: new MemoryCheckpointStore(),
    });
    expect(result).toMatchObject({ finishReason: "length", text: "Cut", stopped: "final" });
    expect(prompts[0]).toMatchObject({ maxOutputTokens: 3 });
  });
});
