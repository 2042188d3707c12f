import {
  CheckpointConflict,
  defineQueue,
  Executor,
  MemoryCheckpointStore,
  startWorker,
  ToolRegistry,
  VersionNotServed,
} from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type LoopModel,
  type Message,
  type ModelReply,
  recoverToolLoop,
  servedToolLoops,
  startToolLoop,
  toolLoopHandle,
} from "../src/index.js";

// startToolLoop: a tool loop saved queued for the fleet, its handle returned at once; a worker serving the loops of
// its name drives it, and the handle's result is the loop's result.

const KEY = "start-loop-tests-key-0123456789abcdef";

/** Asks for the weather once, then answers with what the tool said; the tool counts its runs. */
function weather() {
  const ran = { weather: 0 };
  const registry = new ToolRegistry().tool("weather", () => `sunny ${++ran.weather}`);
  const model: LoopModel = {
    async reply(messages: readonly Message[]): Promise<ModelReply> {
      const told = messages.find((m) => m.role === "tool");
      return told === undefined
        ? { text: "", toolCalls: [{ id: "w1", name: "weather", args: {} }] }
        : { text: `it is ${told.content}`, toolCalls: [] };
    },
  };
  return { ran, registry, model };
}

describe("a tool loop's version", () => {
  it("is sealed at its start: a worker serving two versions drives each loop on its own, one serving another refuses it", async () => {
    const { ran, registry, model } = weather();
    const checkpoints = new MemoryCheckpointStore();
    const base = { checkpoints, checkpointKey: KEY, name: "weather" };
    const ask: Message[] = [{ role: "user", content: "weather?" }];
    const old = await startToolLoop(model, registry, ask, { ...base, version: 1, runId: "old" });
    const current = await startToolLoop(model, registry, ask, { ...base, version: "2", runId: "new" });
    await expect(recoverToolLoop(model, registry, "old", { ...base, version: "2" })).rejects.toBeInstanceOf(
      VersionNotServed,
    );
    expect(ran.weather).toBe(0);
    const worker = startWorker({
      serve: [
        servedToolLoops(model, registry, { ...base, version: "2" }),
        servedToolLoops(model, registry, { ...base, version: 1 }),
      ],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    try {
      expect(await old.result({ timeoutMs: 5_000 })).toMatchObject({ status: "done" });
      expect(await current.result({ timeoutMs: 5_000 })).toMatchObject({ status: "done" });
    } finally {
      await worker.stop();
    }
    expect(ran.weather).toBe(2);
    expect(() => servedToolLoops(model, registry, { ...base, version: -1 })).toThrow(/version must be/);
  });
});

describe("startToolLoop", () => {
  it("returns a queued loop's handle at once; a worker drives it; a start again starts nothing new", async () => {
    const { ran, registry, model } = weather();
    const checkpoints = new MemoryCheckpointStore();
    const options = { checkpoints, checkpointKey: KEY, name: "weather" };
    const ask: Message[] = [{ role: "user", content: "weather?" }];
    const handle = await startToolLoop(model, registry, ask, { ...options, runId: "w" });
    expect(await handle.status()).toEqual({ status: "queued", step: 0 });
    expect((await startToolLoop(model, registry, ask, { ...options, runId: "w" })).runId).toBe("w");
    await expect(startToolLoop(model, registry, ask, { ...options, runId: "w", ifExists: "error" })).rejects.toThrow(
      CheckpointConflict,
    );
    const worker = startWorker({
      serve: [servedToolLoops(model, registry, options)],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    try {
      expect(await handle.result({ timeoutMs: 5_000 })).toMatchObject({ status: "done", text: "it is sunny 1" });
      const far = toolLoopHandle({ checkpoints, checkpointKey: KEY }, "w");
      expect(await far.result()).toMatchObject({ status: "done", runId: "w", text: "it is sunny 1" });
    } finally {
      await worker.stop();
    }
    expect(ran.weather).toBe(1);
  });

  it("a loop started on a queue is taken by a worker serving the queue, by priority", async () => {
    const { registry, model } = weather();
    const checkpoints = new MemoryCheckpointStore();
    const options = { checkpoints, checkpointKey: KEY, name: "weather" };
    const ask: Message[] = [{ role: "user", content: "weather?" }];
    const chat = defineQueue("chat", { concurrency: 1 });
    const low = await startToolLoop(model, registry, ask, { ...options, runId: "low", queue: chat });
    const high = await startToolLoop(model, registry, ask, { ...options, runId: "high", queue: chat, priority: 1 });
    const worker = startWorker({
      serve: [servedToolLoops(model, registry, options)],
      queues: [chat],
      concurrency: 1,
      pollMs: 20,
      stopOnSignals: false,
    });
    try {
      expect(await high.result({ timeoutMs: 5_000 })).toMatchObject({ text: "it is sunny 1" });
      expect(await low.result({ timeoutMs: 5_000 })).toMatchObject({ text: "it is sunny 2" });
    } finally {
      await worker.stop();
    }
  });

  it("a queued flow run is taken by a worker that serves a tool loop of the same name too", async () => {
    const { registry, model } = weather();
    const checkpoints = new MemoryCheckpointStore();
    const options = { checkpoints, checkpointKey: KEY, name: "weather" };
    const flow = new Flow("weather", { state: z.object({ said: z.string().default("") }) })
      .node("say", () => ({ said: "flow" }))
      .end("say");
    const runner = new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY });
    const chat = defineQueue("weather-and-chat", { concurrency: 1 });
    await runner.start(flow, {}, { runId: "as-flow", queue: chat });
    const worker = startWorker({
      serve: [servedToolLoops(model, registry, options), runner.served(flow)],
      queues: [chat],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    try {
      expect(await runner.handle(flow, "as-flow").result({ timeoutMs: 5_000 })).toMatchObject({ said: "flow" });
    } finally {
      await worker.stop();
    }
  });
});
