import { describe, expect, it } from "vitest";
import { Executor, InvalidInput, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowRunner, type FlowRunnerOptions, type RunOptions } from "../src/index.js";
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

describe("a misspelled flow option", () => {
  it("new FlowRunner({ leaseMs }) is InvalidInput naming lease", () => {
    const options = { checkpoints: new MemoryCheckpointStore(), leaseMs: 5000 } as FlowRunnerOptions;
    expect(refused(() => new FlowRunner(executor(), options))).toBe(
      "FlowRunner: unknown option `leaseMs`; did you mean `lease`?",
    );
    const lease = { checkpoints: new MemoryCheckpointStore(), lease: { ttl: 5000 } } as never;
    expect(refused(() => new FlowRunner(executor(), lease))).toMatch(/^FlowRunner: lease: unknown option `ttl`/);
  });

  it("run(flow, input, { id }) is InvalidInput naming runId, and no run starts under a random id", async () => {
    const store = new MemoryCheckpointStore();
    const runner = new FlowRunner(new Executor(new Tools().registry()), { checkpoints: store });
    const options = { id: "order-7" } as RunOptions;
    await expect(runner.run(ticketsFlow(), { show: "Hamlet", seats: 2 }, options)).rejects.toThrow(
      new InvalidInput("FlowRunner.run: unknown option `id`; did you mean `runId`?"),
    );
    expect(await store.listUnfinished("tickets")[Symbol.asyncIterator]().next()).toMatchObject({ done: true });
  });

  it("recover, retry, resume, cancel and recoverAll refuse a key they do not take", async () => {
    const runner = new FlowRunner(new Executor(new Tools().registry()), { checkpoints: new MemoryCheckpointStore() });
    const flow = ticketsFlow();
    await expect(runner.recover(flow, "r", { rerun: true } as never)).rejects.toThrow(
      "FlowRunner.recover: unknown option `rerun`; did you mean `rerunInDoubt`?",
    );
    await expect(runner.retry(flow, "r", { takeover: true } as never)).rejects.toThrow(
      "FlowRunner.retry: unknown option `takeover`; did you mean `takeOver`?",
    );
    await expect(runner.resume(flow, "r", {}, { decided: {} } as never)).rejects.toThrow(
      "FlowRunner.resume: unknown option `decided`; did you mean `decide`?",
    );
    await expect(runner.cancel(flow, "r", "no", { identity: {} } as never)).rejects.toThrow(
      /^FlowRunner\.cancel: unknown option `identity`/,
    );
    await expect(runner.recoverAll(flow, { concurency: 2 } as never)).rejects.toThrow(
      "FlowRunner.recoverAll: unknown option `concurency`; did you mean `concurrency`?",
    );
  });

  it("a Flow's, a node's, an edge's and a Call's options refuse a key they do not take", () => {
    const state = ticketsFlow().schema;
    expect(refused(() => new Flow("f", { state, maxVisit: 3 } as never))).toBe(
      'Flow "f": unknown option `maxVisit`; did you mean `maxVisits`?',
    );
    const flow = new Flow("f", { state });
    expect(refused(() => flow.node("a", () => ({}), { visits: 3 } as never))).toMatch(
      /^Flow "f": node "a": unknown option `visits`; did you mean `maxVisits`\?$/,
    );
    expect(refused(() => flow.edge("a", () => "b", { target: ["b"] } as never))).toBe(
      'Flow "f": edge: unknown option `target`; did you mean `targets`?',
    );
    expect(refused(() => new Call("t", { args: () => ({}), to: "x" } as never))).toMatch(
      /^Call "t": unknown option `to`/,
    );
  });
});
