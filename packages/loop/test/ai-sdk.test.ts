import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { recoverToolLoop, runToolLoop, type Message } from "../src/index.js";
import { aiSdkModel } from "../src/ai-sdk.js";
import { calls, major, said, scripted } from "./ai-mocks.js";

describe(`aiSdkModel with AI SDK ${major}`, () => {
  it("runs against the AI SDK major this project is for", () => {
    expect(String(major)).toBe(process.env["AI_SDK_MAJOR"] ?? "7");
  });

  it("drives a durable loop with an AI SDK language model: tool specs out, tool calls and results in", async () => {
    const { model, prompts } = scripted([calls(["call-1", "hold_seats", { seats: 2 }]), said("Two seats held.")]);
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
    const { model, prompts } = scripted([calls(["call-1", "hold_seats", { seats: 2 }]), said("No seats, sorry.")]);
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

  it("takes a conversation's second user turn on the same run id, with the whole history sent", async () => {
    const { model, prompts } = scripted([said("Hello."), said("Two seats, then.")]);
    const store = new MemoryCheckpointStore();
    const options = { runId: "talk", checkpoints: store };
    await expect(
      runToolLoop(aiSdkModel(model), new ToolRegistry(), [{ role: "user", content: "Hi" }], {
        ...options,
        conversation: true,
      }),
    ).resolves.toMatchObject({ status: "awaiting-user", text: "Hello.", turn: 1 });
    const second = await runToolLoop(
      aiSdkModel(model),
      new ToolRegistry(),
      [{ role: "user", content: "Two" }],
      options,
    );
    expect(second).toMatchObject({ status: "awaiting-user", runId: "talk", text: "Two seats, then.", turn: 2 });
    expect(prompts[1]?.prompt).toMatchObject([
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
      { role: "user", content: [{ type: "text", text: "Two" }] },
    ]);
  });
});
