import { tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CheckpointConflict, InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import {
  readToolLoop,
  recoverAllToolLoops,
  recoverToolLoop,
  runToolLoop,
  type LoopModel,
  type Message,
  type ToolLoopOptions,
} from "../src/index.js";

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

describe("a misspelled loop option", () => {
  it("runToolLoop(…, { maxStep }) is InvalidInput naming maxSteps, and nothing is saved", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const given = { checkpoints, runId: "r", maxStep: 3 } as ToolLoopOptions;
    await expect(runToolLoop(model, registry(), ask, given)).rejects.toThrow(
      new InvalidInput("runToolLoop: unknown option `maxStep`; did you mean `maxSteps`?"),
    );
    await expect(checkpoints.latest("r")).rejects.toThrow(/No checkpoint/);
  });

  it("each entry point refuses a key it does not take, even one another entry point takes", async () => {
    const checkpoints = new MemoryCheckpointStore();
    await expect(recoverToolLoop(model, registry(), "r", { checkpoints, rerunIndoubt: true } as never)).rejects.toThrow(
      "recoverToolLoop: unknown option `rerunIndoubt`; did you mean `rerunInDoubt`?",
    );
    // maxSteps belongs to runToolLoop: a recovery goes on with the run's own.
    await expect(recoverToolLoop(model, registry(), "r", { checkpoints, maxSteps: 3 } as never)).rejects.toThrow(
      /^recoverToolLoop: unknown option `maxSteps`/,
    );
    await expect(recoverAllToolLoops(model, registry(), { checkpoints, concurency: 2 } as never)).rejects.toThrow(
      "recoverAllToolLoops: unknown option `concurency`; did you mean `concurrency`?",
    );
    await expect(readToolLoop("r", { checkpoints, nmae: "chat" } as never)).rejects.toThrow(
      "readToolLoop: unknown option `nmae`; did you mean `name`?",
    );
  });
});

describe("what a loop's errors say", () => {
  it("AI SDK tools given where a registry belongs: wrap them with durableTools(tools)", async () => {
    const tools = { hold: tool({ inputSchema: z.object({ seats: z.number() }), execute: async () => "held" }) };
    const error: unknown = await runToolLoop(model, tools as never, ask, {
      checkpoints: new MemoryCheckpointStore(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInput);
    expect((error as Error).message).toMatch(/wrap them with durableTools\(tools\)/);
  });

  it("a next message to a loop not started as a conversation says how to start one", async () => {
    const checkpoints = new MemoryCheckpointStore();
    await runToolLoop(model, registry(), ask, { checkpoints, runId: "once" });
    const error: unknown = await runToolLoop(model, registry(), [{ role: "user", content: "and then?" }], {
      checkpoints,
      runId: "once",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointConflict);
    expect((error as Error).message).toMatch(/the run ended \(done\).*started with `conversation: true`/);
  });
});
