import { describe, expect, it } from "vitest";
import { Executor, InvalidInput, ToolRegistry } from "@durable/core";
import { FlowRunner, type FlowRunnerOptions } from "../src/index.js";
import { MemoryCheckpointStore, Tools, ticketsFlow } from "./helpers.js";

const KEY = "flow-options-key-0123456789abcdef";
const executor = () => new Executor(new ToolRegistry());

/** Builds a runner and returns the message of the InvalidInput it is refused with. */
function refused(build: () => unknown): string {
  let error: unknown;
  try {
    build();
  } catch (thrown) {
    error = thrown;
  }
  expect(error).toBeInstanceOf(InvalidInput);
  return (error as InvalidInput).message;
}

describe("FlowRunner options", () => {
  it.each<[string, unknown, RegExp]>([
    ["missing", undefined, /^FlowRunner takes an options object, not undefined\.$/],
    ["null", null, /^FlowRunner takes an options object, not null\.$/],
    ["without checkpoints", { checkpointKey: KEY }, /^FlowRunner: checkpoints must be a CheckpointStore/],
    [
      "with a number as checkpoints",
      { checkpoints: 5, checkpointKey: KEY },
      /checkpoints must be a CheckpointStore .* not a number/,
    ],
    [
      "with a number as checkpointKey",
      { checkpoints: new MemoryCheckpointStore(), checkpointKey: 12345 },
      /^checkpointKey must be a key/,
    ],
    [
      "with null as checkpointKey",
      { checkpoints: new MemoryCheckpointStore(), checkpointKey: null },
      /^checkpointKey must be a key .* not null/,
    ],
    [
      "with a number in the key list",
      { checkpoints: new MemoryCheckpointStore(), checkpointKey: [KEY, 7] },
      /^checkpointKey\[1\] must be a string or bytes/,
    ],
    [
      "with a string as events",
      { checkpoints: new MemoryCheckpointStore(), events: "log" },
      /^FlowRunner: events must be a function, not a string\.$/,
    ],
  ])("options %s are InvalidInput naming what is wrong", (_, options, message) => {
    expect(refused(() => new FlowRunner(executor(), options as FlowRunnerOptions))).toMatch(message);
  });

  it("an executor that is not an Executor is InvalidInput", () => {
    expect(refused(() => new FlowRunner({} as Executor, { checkpoints: new MemoryCheckpointStore() }))).toMatch(
      /^FlowRunner takes an Executor/,
    );
  });

  it("a ctx that is not an object is InvalidInput, and nothing is saved", async () => {
    const store = new MemoryCheckpointStore();
    const runner = new FlowRunner(new Executor(new Tools().registry()), { checkpoints: store });
    await expect(
      runner.run(ticketsFlow(), { show: "Hamlet", seats: 2 }, { runId: "r", ctx: "ada" as never }),
    ).rejects.toThrow(/^ctx must be an object/);
    await expect(store.latest("r")).rejects.toThrow(/No checkpoint/);
  });
});
