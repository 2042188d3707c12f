import { describe, expect, it } from "vitest";
import {
  type CheckpointKeys,
  decideInDoubt,
  Executor,
  InvalidInput,
  jsonlEventSink,
  RunWorker,
  ToolRegistry,
} from "../src/index.js";
import {
  bindAnswers,
  checkOptions,
  checkRunnerOptions,
  identityOf,
  type OptionTable,
  RUNNER_OPTIONS,
  type RunnerOptions,
  Sealer,
} from "../src/runner.js";
import { KEY, MemoryCheckpointStore } from "./helpers.js";

/** The InvalidInput `run` throws; fails the test if it throws anything else or nothing. */
function invalid(run: () => unknown): InvalidInput {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput);
    return error as InvalidInput;
  }
  throw new Error("expected InvalidInput, nothing was thrown");
}

describe("option checks", () => {
  it.each<[string, unknown, RegExp]>([
    ["a number", 12345, /^checkpointKey must be a key .* not a number\.$/],
    ["null", null, /^checkpointKey must be .* not null\.$/],
    ["an object", {}, /^checkpointKey must be .* not an object\.$/],
    ["a boolean", true, /^checkpointKey must be .* not a boolean\.$/],
    ["a list holding a number", [123], /^checkpointKey\[0\] must be a string or bytes, not a number\.$/],
    ["a list whose second key is null", [KEY, null], /^checkpointKey\[1\] must be a string or bytes, not null\.$/],
    ["a list whose second key is short", [KEY, "short"], /^checkpointKey\[1\] is 5 bytes/],
  ])("a checkpointKey that is %s is InvalidInput naming it", (_, keys, message) => {
    expect(invalid(() => Sealer.withKeys(keys as CheckpointKeys)).message).toMatch(message);
  });

  it("a ctx that is not an object is InvalidInput naming ctx", () => {
    for (const ctx of [5, "ada", null, ["ada"]]) {
      expect(invalid(() => identityOf(ctx as never)).message).toMatch(/^ctx must be an object/);
    }
  });

  it("an Executor needs a ToolRegistry and an approval port that is a function", () => {
    expect(invalid(() => new Executor({} as never)).message).toMatch(/Executor takes a ToolRegistry/);
    expect(invalid(() => new Executor(new ToolRegistry(), { approvals: "yes" as never })).message).toBe(
      "Executor: approvals must be a function, not a string.",
    );
    expect(invalid(() => new Executor(new ToolRegistry(), null as never)).message).toMatch(
      /Executor takes an options object, not null/,
    );
  });

  it("a tool's options of the wrong type are InvalidInput naming the tool and the option", () => {
    const registry = new ToolRegistry();
    expect(invalid(() => registry.tool("t", () => 1, null as never)).message).toBe(
      'Tool "t" takes an options object, not null.',
    );
    expect(invalid(() => registry.tool("t", () => 1, { idempotent: "yes" as never })).message).toMatch(
      /^Tool "t": idempotent must be true or false/,
    );
    expect(invalid(() => registry.tool("t", () => 1, { description: 5 as never })).message).toMatch(
      /^Tool "t": description must be a string/,
    );
    expect(invalid(() => registry.tool("t", () => 1, { parameters: [] as never })).message).toMatch(
      /^Tool "t": parameters must be an object/,
    );
  });

  it("answers that are not an object of true, false or { approved } are InvalidInput", () => {
    const pending = [{ callId: "c", args: {} }];
    expect(invalid(() => bindAnswers("r", pending, null as never)).message).toMatch(/^answers must be an object/);
    expect(invalid(() => bindAnswers("r", pending, { c: "yes" } as never)).message).toMatch(
      /^answers\["c"\] must be true, false or/,
    );
    expect(invalid(() => bindAnswers("r", pending, { c: { approved: "yes" } } as never)).message).toMatch(
      /approved must be true or false/,
    );
    expect(invalid(() => bindAnswers("r", pending, { c: { reason: "why" } } as never)).message).toMatch(
      /approved must be true or false/,
    );
    expect(bindAnswers("r", pending, { c: { approved: false, reason: "no" } })).toMatchObject([
      { callId: "c", approved: false, reason: "no" },
    ]);
  });

  it("a runner's options: an object, a CheckpointStore as checkpoints, and each option of its type", () => {
    const checkpoints = new MemoryCheckpointStore();
    const table = {
      ...RUNNER_OPTIONS,
      approvals: "function",
      rerunInDoubt: "boolean",
      answers: "object",
      name: "string",
      runId: "string",
    } as const;
    expect(invalid(() => checkRunnerOptions("FlowRunner", undefined, RUNNER_OPTIONS)).message).toBe(
      "FlowRunner takes an options object, not undefined.",
    );
    expect(invalid(() => checkRunnerOptions("FlowRunner", {}, RUNNER_OPTIONS)).message).toMatch(
      /^FlowRunner: checkpoints must be a CheckpointStore .* not undefined\.$/,
    );
    expect(
      invalid(() => checkRunnerOptions("FlowRunner", { checkpoints: { save() {} } }, RUNNER_OPTIONS)).message,
    ).toMatch(/without latest, listUnfinished/);
    for (const [option, value, type] of [
      ["events", "log", "a function"],
      ["approvals", true, "a function"],
      ["rerunInDoubt", "yes", "true or false"],
      ["answers", [], "an object"],
      ["name", 5, "a string"],
      ["runId", 5, "a string"],
    ] as const) {
      expect(invalid(() => checkRunnerOptions("runToolLoop", { checkpoints, [option]: value }, table)).message).toMatch(
        `runToolLoop: ${option} must be ${type}`,
      );
    }
    expect(() =>
      checkRunnerOptions("runToolLoop", { checkpoints, events: () => {}, name: "chat", rerunInDoubt: false }, table),
    ).not.toThrow();
  });
});

describe("a misspelled option", () => {
  it("is InvalidInput naming it and the closest known name, not ignored", () => {
    const table: OptionTable<{ lease?: unknown; events?: unknown }> = { lease: true, events: "function" };
    expect(invalid(() => checkOptions("FlowRunner", { leaseMs: 5000 }, table)).message).toBe(
      "FlowRunner: unknown option `leaseMs`; did you mean `lease`?",
    );
    // Given as undefined, a misspelled key is still a mistake.
    expect(invalid(() => checkOptions("FlowRunner", { evnets: undefined }, table)).message).toBe(
      "FlowRunner: unknown option `evnets`; did you mean `events`?",
    );
    expect(invalid(() => checkOptions("FlowRunner", { zzz: 1 }, table)).message).toBe(
      "FlowRunner: unknown option `zzz`; it takes `lease`, `events`.",
    );
  });

  it("of a tool ({ timeout }, { retry: { maxAttempts } }) is InvalidInput naming the tool and the known name", () => {
    const registry = new ToolRegistry();
    expect(invalid(() => registry.tool("charge", () => 1, { timeout: 5000 } as never)).message).toBe(
      'Tool "charge": unknown option `timeout`; did you mean `timeoutMs`?',
    );
    expect(invalid(() => registry.tool("charge", () => 1, { retry: { maxAttempts: 5 } } as never)).message).toBe(
      'Tool "charge": retry: unknown option `maxAttempts`; did you mean `attempts`?',
    );
    expect(registry.has("charge")).toBe(false);
  });

  it("of an Executor, a worker, an operator action, a lease, a memory store or an event sink is InvalidInput", () => {
    const checkpoints = new MemoryCheckpointStore();
    expect(invalid(() => new Executor(new ToolRegistry(), { approval: () => true } as never)).message).toBe(
      "Executor: unknown option `approval`; did you mean `approvals`?",
    );
    const serve = [{ kind: "flow", name: "f", store: checkpoints, recover: async () => undefined }] as const;
    expect(invalid(() => new RunWorker({ serve, onStuk: () => {} } as never)).message).toBe(
      "startWorker: unknown option `onStuk`; did you mean `onStuck`?",
    );
    expect(invalid(() => new MemoryCheckpointStore({ rows: new Map() } as never)).message).toMatch(
      /^MemoryCheckpointStore: unknown option `rows`/,
    );
    expect(invalid(() => jsonlEventSink("events.jsonl", { fsnyc: true } as never)).message).toBe(
      "jsonlEventSink: unknown option `fsnyc`; did you mean `fsync`?",
    );
  });

  it("of an operator action or its lease is InvalidInput before anything is read", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const options = { checkpoints, checkpointKey: KEY, by: "ada" };
    await expect(decideInDoubt("r", {}, { ...options, expectedStep: 3 } as never)).rejects.toThrow(
      "decideInDoubt: unknown option `expectedStep`; did you mean `expectStep`?",
    );
    await expect(decideInDoubt("r", {}, { ...options, lease: { ownerId: "me" } } as never)).rejects.toThrow(
      "decideInDoubt: lease: unknown option `ownerId`; did you mean `owner`?",
    );
  });

  it("cannot be left out of a table: a table that misses an option, or names one its type has not, does not compile", () => {
    const { codec: _codec, ...withoutCodec } = RUNNER_OPTIONS;
    // @ts-expect-error codec is an option of RunnerOptions the table leaves out
    const missing: OptionTable<RunnerOptions> = withoutCodec;
    // @ts-expect-error leaseMs is no option of RunnerOptions
    const extra: OptionTable<RunnerOptions> = { ...RUNNER_OPTIONS, leaseMs: true };
    expect([missing, extra]).toHaveLength(2);
  });
});
