import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { recoverToolLoop, runToolLoop, type LoopModel, type Message, type ToolLoopOptions } from "../src/index.js";

const model: LoopModel = { reply: async () => ({ text: "hi", toolCalls: [] }) };
const ask: Message[] = [{ role: "user", content: "hello" }];
const registry = () => new ToolRegistry().tool("t", () => "x");

describe("tool loop options", () => {
  it.each<[string, (store: MemoryCheckpointStore) => unknown, RegExp]>([
    ["missing", () => undefined, /^runToolLoop takes an options object, not undefined\.$/],
    ["without checkpoints", () => ({}), /^runToolLoop: checkpoints must be a CheckpointStore/],
    [
      "with a number as checkpointKey",
      (checkpoints) => ({ checkpoints, checkpointKey: 12345 }),
      /^checkpointKey must be a key .* not a number/,
    ],
    [
      "with null as checkpointKey",
      (checkpoints) => ({ checkpoints, checkpointKey: null }),
      /^checkpointKey must be a key .* not null/,
    ],
    [
      "with a number as name",
      (checkpoints) => ({ checkpoints, name: 5 }),
      /^runToolLoop: name must be a string, not a number\.$/,
    ],
    ["with an empty name", (checkpoints) => ({ checkpoints, name: "" }), /^runToolLoop: name must not be empty\.$/],
    [
      "with a string as maxSteps",
      (checkpoints) => ({ checkpoints, maxSteps: "3" }),
      /^runToolLoop: maxSteps must be a whole number/,
    ],
    [
      "with a number as events",
      (checkpoints) => ({ checkpoints, events: 5 }),
      /^runToolLoop: events must be a function/,
    ],
    [
      "with a string as approvals",
      (checkpoints) => ({ checkpoints, approvals: "yes" }),
      /^runToolLoop: approvals must be a function/,
    ],
    ["with a string as ctx", (checkpoints) => ({ checkpoints, ctx: "ada" }), /^ctx must be an object/],
    [
      "with null as answers",
      (checkpoints) => ({ checkpoints, answers: null }),
      /^runToolLoop: answers must be an object, not null/,
    ],
    [
      "with a string as rerunInDoubt",
      (checkpoints) => ({ checkpoints, rerunInDoubt: "yes" }),
      /^runToolLoop: rerunInDoubt must be true or false/,
    ],
    [
      "with an unknown toolErrors",
      (checkpoints) => ({ checkpoints, toolErrors: "ignore" }),
      /^runToolLoop: toolErrors must be "model" or "fail", not "ignore"\.$/,
    ],
  ])("options %s are InvalidInput naming what is wrong, and nothing is saved", async (_, options, message) => {
    const store = new MemoryCheckpointStore();
    const given = options(store) as ToolLoopOptions;
    const error: unknown = await runToolLoop(model, registry(), ask, given).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInput);
    expect((error as Error).message).toMatch(message);
    expect(await store.listUnfinished("tool-loop")[Symbol.asyncIterator]().next()).toMatchObject({ done: true });
  });

  it("a model without reply, a registry that is not one, or messages that are not a list are InvalidInput before the model is asked", async () => {
    const checkpoints = new MemoryCheckpointStore();
    await expect(runToolLoop({} as LoopModel, registry(), ask, { checkpoints })).rejects.toThrow(
      /^runToolLoop takes a model with a reply/,
    );
    await expect(runToolLoop(model, {} as ToolRegistry, ask, { checkpoints })).rejects.toThrow(
      /^runToolLoop takes a ToolRegistry/,
    );
    await expect(runToolLoop(model, registry(), null as never, { checkpoints })).rejects.toThrow(
      /^runToolLoop: messages must be a list/,
    );
    await expect(runToolLoop(model, registry(), ["hi"] as never, { checkpoints })).rejects.toThrow(
      /^runToolLoop: messages\[0\] must be/,
    );
    await expect(recoverToolLoop({} as LoopModel, registry(), "r", { checkpoints })).rejects.toThrow(
      /^recoverToolLoop takes a model/,
    );
    await expect(recoverToolLoop(model, registry(), "r", { checkpoints, name: 5 as never })).rejects.toThrow(
      /^recoverToolLoop: name must be a string/,
    );
    await expect(checkpoints.latest("r")).rejects.toThrow(/No checkpoint/);
  });
});
