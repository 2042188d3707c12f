import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, startWorker, ToolRegistry } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import {
  type LoopModel,
  type Message,
  recoverToolLoop,
  runToolLoop,
  servedToolLoops,
  type ToolSpec,
} from "../src/index.js";

// The loop's sleep tool: the model asks for a wait, the loop is saved asleep with the call pinned, a worker wakes it,
// and the call's result says until when it slept. Every call is made once.

const KEY = "loop-tests-key-0123456789abcdef-xyz";

/** A model that notes, sends a wait with `args`, notes again, then answers; it records what it was told. */
function reminding(args: unknown, told: { specs?: readonly ToolSpec[]; results: string[] }): LoopModel {
  return {
    async reply(messages: readonly Message[], specs) {
      told.specs = specs;
      const tools = messages.filter((message) => message.role === "tool");
      told.results = tools.map((message) => message.content);
      if (tools.length === 0) return { text: "", toolCalls: [{ id: "a", name: "note", args: { n: 1 } }] };
      if (tools.length === 1) return { text: "", toolCalls: [{ id: "b", name: "wait", args: args as never }] };
      if (tools.length === 2) return { text: "", toolCalls: [{ id: "c", name: "note", args: { n: 2 } }] };
      return { text: "done", toolCalls: [] };
    },
  };
}

function setup() {
  const noted: number[] = [];
  const registry = new ToolRegistry().tool("note", (a: { n: number }) => void noted.push(a.n));
  const store = new MemoryCheckpointStore();
  const options = { checkpoints: store, checkpointKey: KEY, name: "reminder", sleepTool: "wait" };
  return { noted, registry, store, options };
}

describe("the loop's sleep tool", () => {
  it("the model's wait saves the loop asleep; a worker wakes it and the model is told until when it slept, each call once", async () => {
    const { noted, registry, store, options } = setup();
    const told: { specs?: readonly ToolSpec[]; results: string[] } = { results: [] };
    const model = reminding({ seconds: 0.3 }, told);
    const asleep = await runToolLoop(model, registry, [{ role: "user", content: "remind me" }], {
      ...options,
      runId: "l",
    });
    expect(asleep).toMatchObject({ status: "asleep", runId: "l" });
    expect(told.specs?.map((spec) => spec.name)).toEqual(["note", "wait"]);
    expect(noted).toEqual([1]);
    // Before the wake time a recovery claims nothing.
    expect(await recoverToolLoop(model, registry, "l", options)).toMatchObject({ status: "asleep" });
    const worker = startWorker({
      serve: [servedToolLoops(model, registry, options)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      await until(async () => (await store.latest("l")).status === "done", 5_000);
    } finally {
      await worker.stop();
    }
    expect(noted).toEqual([1, 2]);
    const { until: wake } = asleep as { until: number };
    expect(told.results[1]).toBe(`slept until ${new Date(wake).toISOString()}`);
  });

  it("a wait until a time already passed goes on at once; arguments that are not a wait go back to the model as an error", async () => {
    const { noted, registry, options } = setup();
    const past = { results: [] as string[] };
    const done = await runToolLoop(reminding({ until: "2020-01-01T00:00:00Z" }, past), registry, [], {
      ...options,
      runId: "past",
    });
    expect(done).toMatchObject({ status: "done" });
    expect(past.results[1]).toBe("slept until 2020-01-01T00:00:00.000Z");
    for (const [runId, args] of [
      ["words", { seconds: "ten" }],
      ["both", { seconds: 1, until: "2030-01-01T00:00:00Z" }],
      ["far", { until: "+100000-01-01T00:00:00Z" }],
    ] as const) {
      const bad = { results: [] as string[] };
      expect(await runToolLoop(reminding(args, bad), registry, [], { ...options, runId })).toMatchObject({
        status: "done",
      });
      expect(bad.results[1]).toMatch(/^error: /);
    }
    expect(noted).toEqual([1, 2, 1, 2, 1, 2, 1, 2]);
  });

  it("a sleepTool that is not a tool name, or is a registered tool's, is InvalidInput before anything runs", async () => {
    const { registry, store } = setup();
    const model = reminding({ seconds: 1 }, { results: [] });
    for (const sleepTool of ["two words", "note", ""])
      await expect(
        runToolLoop(model, registry, [], { checkpoints: store, checkpointKey: KEY, sleepTool }),
      ).rejects.toThrow(InvalidInput);
  });
});
