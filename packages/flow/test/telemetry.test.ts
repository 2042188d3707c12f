import {
  defineQueue,
  Executor,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { trace } from "@opentelemetry/api";
import { until } from "@durable/test-utils/waiting";
import { context, type ContextManager, type MeterProvider, metrics, trace as traceApi } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { KEY } from "./helpers.js";
import {
  BasicTracerProvider,
  parentOf,
  type ReadableSpan,
  registerOtel,
  type SpanProcessor,
  sumOf,
} from "@durable/test-utils/otel";

// OpenTelemetry, registered as a service registers it: the spans a run makes hang together in one trace under the
// caller's span, a tool's own spans under its call's; the metrics count what happened, read from the SDK's reader.

const State = z.object({ order: z.string(), note: z.string().default("") });

let otel: ReturnType<typeof registerOtel>;
beforeEach(() => {
  otel = registerOtel();
});
afterEach(() => otel.dispose());

/** An order flow: charge, then mail; the charge's own HTTP call is a span of the app's, and `hang` keeps it from ending. */
function orders(hang: (order: string) => boolean = () => false, appSpan = true) {
  const ran = { charge_card: 0, send_mail: 0 };
  const registry = new ToolRegistry()
    .tool("charge_card", async ({ order }: { order: string }) => {
      ran.charge_card++;
      if (!appSpan) return `charged ${order}`;
      return trace.getTracer("app").startActiveSpan("POST /charges", async (span) => {
        if (hang(order)) await new Promise(() => undefined);
        span.end();
        return `charged ${order}`;
      });
    })
    .tool("send_mail", ({ order }: { order: string }) => {
      ran.send_mail++;
      return `mailed ${order}`;
    });
  const flow = new Flow("orders", { state: State })
    .node("charge", async (s, ctx) => ({ note: await ctx.call<string>("charge_card", { order: s.order }) }))
    .node("mail", async (s, ctx) => ({ note: await ctx.call<string>("send_mail", { order: s.order }) }))
    .edge("charge", "mail")
    .end("mail");
  return { ran, registry, flow };
}

function runner(store: MemoryCheckpointStore, registry: ToolRegistry, owner: string) {
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    lease: { owner, ms: 300 },
  });
}

const named = (spans: readonly ReadableSpan[], name: string) => spans.filter((span) => span.name === name);

describe("traces", () => {
  it("a run's spans hang together under the caller's: start, attempt, each step, each call, and the tool's own span", async () => {
    const { registry, flow } = orders();
    const store = new MemoryCheckpointStore();
    await trace.getTracer("app").startActiveSpan("POST /orders", async (request) => {
      await runner(store, registry, "w1").run(flow, { order: "o1" }, { runId: "t1" });
      request.end();
    });
    const spans = otel.spans();
    const [request] = named(spans, "POST /orders");
    const [start] = named(spans, "durable.start orders");
    const [attempt] = named(spans, "durable.run orders");
    const steps = named(spans, "durable.step orders");
    const [charge] = named(spans, "durable.call charge_card");
    const [mail] = named(spans, "durable.call send_mail");
    const [http] = named(spans, "POST /charges");
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    expect(parentOf(start!)).toBe(request!.spanContext().spanId);
    expect(parentOf(attempt!)).toBe(start!.spanContext().spanId);
    expect(attempt!.links).toEqual([]);
    expect(attempt!.attributes).toMatchObject({
      "durable.run.id": "t1",
      "durable.run.kind": "flow",
      "durable.run.name": "orders",
      "durable.claim": "start",
      "durable.run.outcome": "done",
    });
    expect(steps.map((step) => step.attributes["durable.run.round"])).toEqual([1, 2]);
    for (const step of steps) expect(parentOf(step)).toBe(attempt!.spanContext().spanId);
    expect(parentOf(charge!)).toBe(steps[0]!.spanContext().spanId);
    expect(parentOf(mail!)).toBe(steps[1]!.spanContext().spanId);
    expect(charge!.attributes).toMatchObject({
      "durable.call.tool": "charge_card",
      "durable.call.attempt": 1,
      "durable.call.rerun": false,
      "durable.call.outcome": "done",
    });
    expect(charge!.attributes["durable.call.id"]).toMatch(/charge_card/);
    expect(parentOf(http!)).toBe(charge!.spanContext().spanId);
  });

  it("a run taken over goes on in the trace it started in, each attempt linked to the one before; a decided call is a span marked replayed", async () => {
    const { registry, flow } = orders((order) => order === "stuck");
    const store = new MemoryCheckpointStore();
    runner(store, registry, "w1")
      .run(flow, { order: "stuck" }, { runId: "t2" })
      .catch(() => undefined);
    await until(() => named(otel.spans(), "durable.start orders").length === 1);
    await until(async () => (await store.latest("t2").catch(() => undefined)) !== undefined);
    const callId = await inDoubtCallIdOf(store, registry, flow, "t2");
    await runner(store, registry, "w3").recover(flow, "t2", { decide: { [callId]: { result: "by hand" } }, by: "ops" });
    const spans = otel.spans();
    const [start] = named(spans, "durable.start orders");
    const attempts = named(spans, "durable.run orders");
    // The first attempt never ends (its tool hangs, as a dead worker's would): only the links name it.
    expect(attempts.map((span) => span.attributes["durable.claim"])).toEqual(["recover", "decision"]);
    const [takeover, decided] = attempts;
    for (const attempt of attempts) {
      expect(parentOf(attempt)).toBe(start!.spanContext().spanId);
      expect(attempt.spanContext().traceId).toBe(start!.spanContext().traceId);
      expect(attempt.links).toHaveLength(1);
    }
    expect(takeover!.attributes).toMatchObject({
      "durable.run.taken_over": true,
      "durable.worker": expect.stringMatching(/^w2#/),
    });
    expect(takeover!.status.message).toMatch(/^RecoveryNeedsDecision/);
    expect(takeover!.links[0]!.context.spanId).not.toBe(takeover!.spanContext().spanId);
    expect(decided!.links[0]!.context.spanId).toBe(takeover!.spanContext().spanId);
    expect(decided!.attributes["durable.run.outcome"]).toBe("done");
    const charges = named(spans, "durable.call charge_card");
    expect(charges.map((span) => span.attributes["durable.call.outcome"])).toEqual(["replayed"]);
    expect(parentOf(charges[0]!)).toBe(named(spans, "durable.step orders")[0]!.spanContext().spanId);
  });
});

describe("metrics", () => {
  it("count a scripted day: 3 runs, a takeover, a call in doubt and its decision", async () => {
    const { ran, registry, flow } = orders((order) => order === "o3");
    const store = new MemoryCheckpointStore();
    const w1 = runner(store, registry, "w1");
    await w1.run(flow, { order: "o1" }, { runId: "m1" });
    await w1.run(flow, { order: "o2" }, { runId: "m2" });
    const stuck = w1.run(flow, { order: "o3" }, { runId: "m3" });
    stuck.catch(() => undefined);
    await until(() => ran.charge_card === 3);
    // Long enough for w1's timer to renew its 300 ms lease (every 100 ms) while the charge hangs.
    await until(async () => sumOf((await otel.metrics()).get("durable.lease.renewals")) > 0);
    // Another worker takes the run over while w1's tool still hangs: the charge is in doubt, so it stops for a decision.
    const callId = await inDoubtCallIdOf(store, registry, flow, "m3");
    await runner(store, registry, "w2").recover(flow, "m3", { decide: { [callId]: { result: "charged" } }, by: "ops" });
    // w1's lease timer renews within a third of its 300 ms lease and is refused: it lost the run.
    await until(async () => sumOf((await otel.metrics()).get("durable.lease.losses")) === 1);
    const got = await otel.metrics();
    const run = { "durable.run.kind": "flow", "durable.run.name": "orders" };
    expect(sumOf(got.get("durable.runs.started"), run)).toBe(3);
    expect(sumOf(got.get("durable.runs.claimed"), { ...run, "durable.claim": "recover" })).toBe(1);
    expect(sumOf(got.get("durable.runs.claimed"), { ...run, "durable.claim": "decision" })).toBe(1);
    expect(sumOf(got.get("durable.runs.taken_over"), run)).toBe(1);
    expect(sumOf(got.get("durable.runs.ended"), { ...run, "durable.run.status": "done" })).toBe(3);
    expect(sumOf(got.get("durable.runs.ended"), { "durable.run.status": "failed" })).toBe(0);
    const calls = (tool: string, outcome: string) =>
      sumOf(got.get("durable.calls"), { "durable.call.tool": tool, "durable.call.outcome": outcome });
    expect(calls("charge_card", "done")).toBe(2);
    expect(calls("send_mail", "done")).toBe(3);
    expect(sumOf(got.get("durable.calls.in_doubt"), { "durable.call.tool": "charge_card" })).toBe(1);
    expect(sumOf(got.get("durable.lease.losses"))).toBe(1);
    expect(sumOf(got.get("durable.lease.renewals"))).toBeGreaterThan(0);
    expect(ran).toEqual({ charge_card: 3, send_mail: 3 });
    const steps = got
      .get("durable.step.duration")!
      .filter((point) => point.attributes["durable.run.name"] === "orders");
    // Two supersteps a run; m3's first one never ended (its tool hangs).
    expect(steps.reduce((n, point) => n + (point.value as { count: number }).count, 0)).toBe(6);
    const commits = got.get("durable.commit.duration")!;
    expect(commits.map((point) => point.attributes["durable.store"])).toEqual(["MemoryCheckpointStore"]);
    expect((commits[0]!.value as { count: number }).count).toBeGreaterThan(3);
  });
});

describe("queue depth", () => {
  it("a worker serving a queue reports how many of its runs wait, as the gauge durable.queue.depth", async () => {
    const { registry, flow } = orders(() => true);
    const store = new MemoryCheckpointStore();
    const jobs = defineQueue("jobs", { concurrency: 1 });
    const w1 = runner(store, registry, "w1");
    for (const id of ["q1", "q2", "q3"]) await w1.start(flow, { order: id }, { runId: id, queue: jobs });
    const w = startWorker({
      serve: [w1.served(flow)],
      queues: [jobs],
      pollMs: 20,
      stopOnSignals: false,
      logger: false,
    });
    // One run holds the queue's one slot (its charge hangs); the other two wait. The gauge reports the depth it read
    // at the collection before, so it is read until it settles.
    const depth = async () => sumOf((await otel.metrics()).get("durable.queue.depth"), { "durable.queue": "jobs" });
    await until(async () => (await depth()) === 2);
    await w.stop();
  });
});

describe("a broken OpenTelemetry SDK", () => {
  it("never fails a run, leaves a call in doubt or runs a tool twice: a warning, once", async () => {
    otel.dispose();
    const boom = (): never => {
      throw new Error("the SDK broke");
    };
    const processor: SpanProcessor = {
      onStart: boom,
      onEnd: boom,
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    traceApi.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [processor] }));
    const instrument = { add: boom, record: boom, addCallback: boom, removeCallback: boom };
    const meter = { createCounter: () => instrument, createHistogram: () => instrument, createObservableGauge: boom };
    metrics.setGlobalMeterProvider({ getMeter: () => meter } as unknown as MeterProvider);
    const manager = { active: boom, with: boom, bind: boom, enable: () => manager, disable: () => manager };
    context.setGlobalContextManager(manager as unknown as ContextManager);
    const warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    try {
      // The tools make no span of their own: the SDK would fail them, as it would any code of the user's.
      const { ran, registry, flow } = orders(() => false, false);
      const store = new MemoryCheckpointStore();
      const done = await runner(store, registry, "w1").run(flow, { order: "o1" }, { runId: "b1" });
      expect(done).toMatchObject({ status: "done", state: { note: "mailed o1" } });
      expect(ran).toEqual({ charge_card: 1, send_mail: 1 });
      const said = warnings.mock.calls.map(([warning]) => String(warning));
      expect(said).toEqual([expect.stringMatching(/^@durable: OpenTelemetry failed \(runs go on without it\)/)]);
    } finally {
      warnings.mockRestore();
    }
  });
});

/** The id of the one call in doubt of `runId`: another worker's takeover stops for it, with `RecoveryNeedsDecision`. */
async function inDoubtCallIdOf<S>(store: MemoryCheckpointStore, registry: ToolRegistry, flow: Flow<S>, runId: string) {
  const error = await runner(store, registry, "w2")
    .recover(flow, runId, { takeOver: true })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RecoveryNeedsDecision);
  return (error as RecoveryNeedsDecision).calls[0]!.callId;
}
