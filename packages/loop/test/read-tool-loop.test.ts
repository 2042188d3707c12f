import { describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  IdentityMismatch,
  InvalidInput,
  MemoryCheckpointStore,
  ToolRegistry,
} from "@durable/core";
import { readToolLoop, runToolLoop, type LoopModel } from "../src/index.js";

const KEY = "read-tool-loop-test-key-0123456789abcdef";
const replies = (...texts: string[]): LoopModel => {
  let n = 0;
  return {
    async reply() {
      const text = texts[n++];
      if (text === undefined) throw new Error("the model is down");
      return text === "charge"
        ? { text: "", toolCalls: [{ id: "c1", name: "charge", args: { cents: 5 } }], usage: { inputTokens: 3 } }
        : { text, toolCalls: [], usage: { inputTokens: 2, outputTokens: 1 } };
    },
  };
};

describe("readToolLoop", () => {
  it("reads where a loop stands without claiming it: a waiting conversation, a pause, a failure, the end", async () => {
    const store = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool("charge", () => "charged", { approval: true });
    const options = { checkpoints: store, checkpointKey: KEY, ctx: { user: "ada" } };
    const hi = [{ role: "user" as const, content: "Hi" }];
    await runToolLoop(replies("Hello."), registry, hi, { ...options, runId: "talk", conversation: true });
    await expect(readToolLoop("talk", options)).resolves.toMatchObject({
      status: "paused",
      awaitingUser: true,
      turn: 1,
      stopped: "final",
      messages: [...hi, { role: "assistant", content: "Hello." }],
      usage: { inputTokens: 2, outputTokens: 1 },
    });
    await runToolLoop(replies("charge"), registry, hi, { ...options, runId: "pay" });
    await expect(readToolLoop("pay", options)).resolves.toMatchObject({ status: "paused", awaitingUser: false });
    await expect(runToolLoop(replies(), registry, hi, { ...options, runId: "down" })).rejects.toThrow(/down/);
    await expect(readToolLoop("down", options)).resolves.toMatchObject({
      status: "failed",
      error: expect.stringContaining("the model is down"),
    });
    await runToolLoop(replies("Bye."), registry, hi, { ...options, runId: "once" });
    await expect(readToolLoop("once", options)).resolves.toMatchObject({ status: "done", messages: { length: 2 } });
    // Reading claimed nothing: the conversation goes on from the same step.
    const before = await readToolLoop("talk", options);
    await expect(
      runToolLoop(replies("Again."), registry, [{ role: "user", content: "More" }], { ...options, runId: "talk" }),
    ).resolves.toMatchObject({ status: "awaiting-user", step: before.step + 2 });
  });

  it("refuses another user, another loop's name, an unknown run and bad options", async () => {
    const store = new MemoryCheckpointStore();
    const options = { checkpoints: store, checkpointKey: KEY };
    await runToolLoop(replies("Hello."), new ToolRegistry(), [{ role: "user", content: "Hi" }], {
      ...options,
      runId: "mine",
      ctx: { user: "ada" },
    });
    await expect(readToolLoop("mine", { ...options, ctx: { user: "bob" } })).rejects.toThrow(IdentityMismatch);
    await expect(readToolLoop("mine", { ...options, name: "other" })).rejects.toThrow(CheckpointConflict);
    await expect(readToolLoop("nobody", options)).rejects.toThrow(CheckpointNotFound);
    await expect(readToolLoop("mine", { ...options, conversation: "yes" } as never)).rejects.toThrow(InvalidInput);
  });
});
