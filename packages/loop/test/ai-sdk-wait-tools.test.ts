import { tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MemoryCheckpointStore, sendEvent } from "@durable/core";
import { recoverToolLoop, runToolLoop } from "../src/index.js";
import { aiSdkModel, durableTools } from "../src/ai-sdk.js";
import { calls, major, said, scripted } from "./ai-mocks.js";

// The loop's waiting tools (`sleepTool`, `eventTools`) reach an AI SDK model as its own tools do: a function tool
// with a description and a JSON Schema; the model's call is made by the loop, and the payload comes back as JSON.

const KEY = "loop-tests-key-0123456789abcdef-xyz";

describe(`the loop's waiting tools with AI SDK ${major}`, () => {
  it("the sleep and event tools are offered beside the ToolSet's; an event's payload comes back as the call's JSON output", async () => {
    const tools = {
      ship: tool({ description: "Ships the order", inputSchema: z.object({}), execute: async () => "shipped" }),
    };
    const { model, prompts } = scripted([calls(["call-1", "await_payment", {}]), said("Paid, shipping.")]);
    const store = new MemoryCheckpointStore();
    const options = {
      checkpoints: store,
      checkpointKey: KEY,
      sleepTool: "wait",
      eventTools: { await_payment: { event: "paid", timeoutMs: 3_600_000, description: "Waits for the payment." } },
    };
    const ask = [{ role: "user" as const, content: "Ship once paid" }];
    const loop = aiSdkModel(model);
    const waiting = await runToolLoop(loop, durableTools(tools), ask, { ...options, runId: "a" });
    expect(waiting).toMatchObject({ status: "asleep", waitsFor: ["paid"] });
    const offered = prompts[0]?.tools as { type: string; name: string; description?: string; inputSchema: object }[];
    expect(offered.map(({ type, name }) => [type, name])).toEqual([
      ["function", "ship"],
      ["function", "wait"],
      ["function", "await_payment"],
    ]);
    expect(offered[2]).toMatchObject({
      description: "Waits for the payment.",
      inputSchema: {
        type: "object",
        properties: { timeoutSeconds: { type: "number", minimum: 0, maximum: 3600 } },
        additionalProperties: false,
      },
    });

    await sendEvent({ checkpoints: store, checkpointKey: KEY, runId: "a", name: "paid", payload: { cents: 1200 } });
    const done = await recoverToolLoop(loop, durableTools(tools), "a", options);
    expect(done).toMatchObject({ status: "done", text: "Paid, shipping." });
    expect(prompts).toHaveLength(2);
    expect(JSON.stringify(prompts[1])).toContain('"output":{"type":"json","value":{"cents":1200}}');
  });
});
