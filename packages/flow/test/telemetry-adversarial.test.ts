import {
  Executor,
  MemoryCheckpointStore,
  NonRetryable,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY, storeWith } from "./helpers.js";
import { BasicTracerProvider, registerOtel, type SpanProcessor, sumOf } from "@durable/test-utils/otel";

// What OpenTelemetry must never change, tried on paths the telemetry tests do not walk: a fork's first claim is no
// takeover, an SDK whose ids are in another case never makes a run unreadable, a run refused at its start leaves no
// span open.

let otel: ReturnType<typeof registerOtel>;
beforeEach(() => {
  otel = registerOtel();
});
afterEach(() => otel.dispose());

const State = z.object({ n: z.number().int() });

/** Three supersteps, one call each. */
function threeSteps() {
  const registry = new ToolRegistry().tool("effect", (args: { n: number }) => `did ${args.n}`);
  const node = async (state: { n: number }, ctx: { call<T>(tool: string, args: unknown): Promise<T> }) => {
    await ctx.call("effect", { n: state.n });
    return { n: state.n + 1 };
  };
  const flow = new Flow("three", { state: State })
    .node("s1", node)
    .node("s2", node)
    .node("s3", node)
    .edge("s1", "s2")
    .edge("s2", "s3")
    .end("s3");
  return { registry, flow };
}

const runnerOn = (store: MemoryCheckpointStore, registry: ToolRegistry) =>
  new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });

describe("OpenTelemetry, adversarially", () => {
  it("a fork a worker claims is claimed, not taken over: no taken_over count, span attribute or log line", async () => {
    const { registry, flow } = threeSteps();
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.run(flow, { n: 0 }, { runId: "orig" });
    const handle = await runner.fork(flow, "orig", { fromStep: 1, runId: "fork", by: "dev@example.com" });
    const said: string[] = [];
    const logger = { info: (m: string) => void said.push(m), warn: () => undefined, error: () => undefined };
    const worker = startWorker({
      serve: [runner.served(flow)],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
      logger,
    });
    try {
      expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ n: 3 });
    } finally {
      await worker.stop();
    }
    const claims = otel.spans().filter((span) => span.attributes["durable.run.id"] === "fork");
    const attempt = claims.find((span) => span.name === "durable.run three");
    expect(attempt?.attributes).toMatchObject({ "durable.claim": "recover", "durable.run.taken_over": false });
    expect(sumOf((await otel.metrics()).get("durable.runs.taken_over"))).toBe(0);
    expect(said.filter((line) => line.includes("took over"))).toEqual([]);
  });

  it("an SDK whose ids are upper-case hex (valid to OpenTelemetry) never makes a run unreadable: its retry goes on", async () => {
    otel.dispose();
    const hex = (length: number) =>
      Array.from({ length }, () => "0123456789ABCDEF"[Math.floor(Math.random() * 16)]).join("");
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ idGenerator: { generateTraceId: () => hex(32), generateSpanId: () => hex(16) } }),
    );
    const registry = new ToolRegistry().tool("effect", () => "ok");
    let fail = true;
    const flow = new Flow("upper", { state: State })
      .node("s1", async (state, ctx) => {
        await ctx.call("effect", {});
        if (fail) throw new Error("the node failed once");
        return { n: state.n + 1 };
      })
      .end("s1");
    const runner = runnerOn(new MemoryCheckpointStore(), registry);
    await expect(runner.run(flow, { n: 0 }, { runId: "u" })).rejects.toThrow(/failed once/);
    fail = false;
    expect(await runner.retry(flow, "u")).toMatchObject({ status: "done", state: { n: 1 } });
  });

  it("a start refused before its step 0 (a malformed run id) ends every span it began", async () => {
    otel.dispose();
    const open = new Set<string>();
    const processor: SpanProcessor = {
      onStart: (span) => void open.add(span.spanContext().spanId),
      onEnd: (span) => void open.delete(span.spanContext().spanId),
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [processor] }));
    const { registry, flow } = threeSteps();
    const runner = runnerOn(new MemoryCheckpointStore(), registry);
    await expect(runner.run(flow, { n: 0 }, { runId: "x".repeat(300) })).rejects.toThrow(/run id/);
    expect(open.size).toBe(0);
  });
});

describe("a call's span", () => {
  it("ends when the record of its tool's error cannot be stored (the store failed): no span is left open", async () => {
    otel.dispose();
    const open = new Map<string, string>();
    const processor: SpanProcessor = {
      onStart: (span) => void open.set(span.spanContext().spanId, span.name),
      onEnd: (span) => void open.delete(span.spanContext().spanId),
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [processor] }));
    let storeDown = false;
    const memory = new MemoryCheckpointStore();
    const failing = storeWith(memory, {
      recordCall: (runId, segment, seq, sealed) =>
        storeDown
          ? Promise.reject(new StoreUnavailable("the store is down"))
          : memory.recordCall(runId, segment, seq, sealed),
    });
    const registry = new ToolRegistry().tool("declined", () => {
      storeDown = true;
      throw new NonRetryable("card declined");
    });
    const flow = new Flow("leaky", { state: State })
      .node("s1", async (state, ctx) => {
        await ctx.call("declined", {}).catch(() => undefined);
        return state;
      })
      .end("s1");
    const runner = new FlowRunner(new Executor(registry), { checkpoints: failing, checkpointKey: KEY });
    await expect(runner.run(flow, { n: 0 }, { runId: "l" })).rejects.toThrow(/down/);
    expect([...open.values()]).toEqual([]);
  });
});

describe("durable.runs.ended", () => {
  it("counts a run once: a cancel of a run that ended is refused and counts nothing", async () => {
    const { registry, flow } = threeSteps();
    const runner = runnerOn(new MemoryCheckpointStore(), registry);
    await runner.run(flow, { n: 0 }, { runId: "e" });
    await expect(runner.cancel(flow, "e", "too late")).rejects.toThrow();
    const ended = (await otel.metrics()).get("durable.runs.ended");
    expect(sumOf(ended)).toBe(1);
    expect(sumOf(ended, { "durable.run.status": "done" })).toBe(1);
  });
});
