import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWorker } from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { printedLines } from "@durable/test-utils/processes";
import { until } from "@durable/test-utils/waiting";
import { trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { effects, KEY, LEASE_MS, orders, RUN_ID, runner } from "./otel-kill-flow.js";
import { registerOtel, type SpanLine, spanLine, spansIn } from "@durable/test-utils/otel";
import { sqliteFiles } from "./sqlite-files.js";

// One trace across a SIGKILL: a request in this process starts a run, worker A (a process of its own) drives it and
// dies inside the second step's tool, and a worker in this process takes it over and finishes it. A's spans are the
// ones it wrote to its file as they ended; this process's are in the SDK's in-memory exporter.

const CHILD = fileURLToPath(new URL("./otel-kill-child.ts", import.meta.url));
const { files, open } = sqliteFiles("durable-otel-kill-");
const children: ChildProcess[] = [];
let otel: ReturnType<typeof registerOtel>;
beforeEach(() => {
  otel = registerOtel();
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  otel.dispose();
});

/** Worker A: a process of `otel-kill-child.ts`, its `charge` hanging. */
function workerA(db: string, effectsFile: string, spansFile: string) {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, effectsFile, spansFile], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return { child, line: printedLines(child).line };
}

/** The one span named `name` among `spans`. */
function one(spans: readonly SpanLine[], name: string): SpanLine {
  const found = spans.filter((span) => span.name === name);
  expect(found.map((span) => span.name)).toEqual([name]);
  return found[0] as SpanLine;
}

const named = (spans: readonly SpanLine[], name: string) => spans.filter((span) => span.name === name);

describe("a run SIGKILLed in its second step and finished by another worker process, traced", () => {
  it("is one trace with both workers' spans: the dead attempt linked, each call attempt a span with its attributes, each tool's own span under its call", {
    timeout: 60_000,
  }, async () => {
    const { db, effects: effectsFile } = files();
    const spansFile = join(dirname(db), "spans-a.jsonl");
    const store = open(db);
    const r = runner(store, effectsFile);
    // An HTTP request starts the run and returns: the start span is its child, and is sealed with step 0.
    await trace.getTracer("app").startActiveSpan("POST /orders", async (request) => {
      await r.start(orders, { order: "o1" }, { runId: RUN_ID });
      request.end();
    });

    const a = workerA(db, effectsFile, spansFile);
    await a.line("serving");
    await until(() => effects(effectsFile).includes("charge started"), 30_000);
    a.child.kill("SIGKILL");
    await new Promise((resolve) => a.child.once("exit", resolve));
    expect(effects(effectsFile)).toEqual(["reserve started", "reserve done", "charge started"]);

    // Worker B, in this process: it takes the run over once A's lease ran out, reruns the idempotent charge, and ends it.
    const b = startWorker({
      serve: [r.served(orders)],
      pollMs: 100,
      maxPollMs: 100,
      logger: false,
      stopOnSignals: false,
    });
    try {
      const state = await r.handle(orders, RUN_ID).result({ timeoutMs: 10 * LEASE_MS + 20_000 });
      expect(state).toEqual({ order: "o1", note: "mail o1" });
    } finally {
      await b.stop();
    }
    expect(await r.handle(orders, RUN_ID).status()).toMatchObject({ status: "done" });
    // Reserve ran once (A's finished call is not run again), charge twice (A's, killed; B's rerun), mail once.
    expect(effects(effectsFile)).toEqual([
      ...["reserve started", "reserve done", "charge started"],
      ...["charge started", "charge done", "mail started", "mail done"],
    ]);

    const spansA = spansIn(spansFile);
    const spansB = otel.spans().map(spanLine);
    expect(new Set([...spansA, ...spansB].map((span) => span.traceId))).toEqual(new Set([spansB[0]?.traceId]));
    const request = one(spansB, "POST /orders");
    const start = one(spansB, "durable.start orders");
    expect(start.parentSpanId).toBe(request.spanId);

    // A died inside its attempt, its second step and its charge call: none of them ended, so none is in its file.
    expect(spansA.map((span) => span.name).sort()).toEqual([
      "POST /reserve",
      "durable.call reserve",
      "durable.step orders",
    ]);
    const stepA = one(spansA, "durable.step orders");
    expect(stepA.attributes["durable.run.round"]).toBe(1);
    // A's attempt span is known by the spans under it: its id is their parent's.
    const attemptA = stepA.parentSpanId;
    expect(attemptA).toMatch(/^[0-9a-f]{16}$/);
    const reserve = one(spansA, "durable.call reserve");
    expect(reserve.parentSpanId).toBe(stepA.spanId);
    expect(reserve.attributes).toMatchObject({
      "durable.run.id": RUN_ID,
      "durable.call.tool": "reserve",
      "durable.call.attempt": 1,
      "durable.call.rerun": false,
      "durable.call.outcome": "done",
    });
    expect(one(spansA, "POST /reserve").parentSpanId).toBe(reserve.spanId);

    // B's attempt: under the start span, linked to A's dead attempt and to nothing else.
    const attemptB = one(spansB, "durable.run orders");
    expect(attemptB.parentSpanId).toBe(start.spanId);
    expect(attemptB.links).toEqual([
      { traceId: start.traceId, spanId: attemptA, attributes: { "durable.link": "previous attempt" } },
    ]);
    expect(attemptB.attributes).toMatchObject({
      "durable.run.id": RUN_ID,
      "durable.claim": "recover",
      "durable.run.taken_over": true,
      "durable.run.outcome": "done",
    });
    const stepsB = named(spansB, "durable.step orders");
    expect(stepsB.map((step) => step.attributes["durable.run.round"])).toEqual([2, 3]);
    for (const step of stepsB) expect(step.parentSpanId).toBe(attemptB.spanId);

    // The killed charge: B's attempt at it is a rerun of attempt 1, with the call id the log started it under in A.
    const log = await readCallLog(store, Sealer.withKeys(KEY), RUN_ID, []);
    const started = log.filter((record) => record.kind === "started");
    expect(started.map((call) => call.tool)).toEqual(["reserve", "charge", "charge", "mail"]);
    /** B's span of a call of `tool`: under `step`, attempt 1 of the call the log started, done. */
    const callSpan = (tool: string, step: SpanLine | undefined, callId: string | undefined, rerun: boolean) => {
      const span = one(spansB, `durable.call ${tool}`);
      expect(span.parentSpanId).toBe(step?.spanId);
      expect(span.attributes).toMatchObject({
        "durable.call.id": callId,
        "durable.call.tool": tool,
        "durable.call.attempt": 1,
        "durable.call.rerun": rerun,
        "durable.call.outcome": "done",
      });
      return span;
    };
    const charge = callSpan("charge", stepsB[0], started[1]?.callId, true);
    expect(charge.attributes["durable.call.in_doubt"]).toBeUndefined();
    const mail = callSpan("mail", stepsB[1], started[3]?.callId, false);
    expect(reserve.attributes["durable.call.id"]).toBe(started[0]?.callId);
    // B goes on from the checkpoint after step 1: reserve is neither run nor replayed there.
    expect(named(spansB, "durable.call reserve")).toEqual([]);
    expect(one(spansB, "POST /charge").parentSpanId).toBe(charge.spanId);
    expect(one(spansB, "POST /mail").parentSpanId).toBe(mail.spanId);
  });
});
