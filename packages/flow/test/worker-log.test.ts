import {
  InvalidInput,
  MemoryCheckpointStore,
  NonRetryable,
  RecoveryNeedsDecision,
  startWorker,
  ToolRegistry,
  type WorkerLogger,
} from "@durable/core";
import type { MemoryData } from "@durable/core/internal";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { Tools } from "./helpers.js";
import { flow, inside, order, runner } from "./workers.js";

// A worker says what it did, one line each, through the logger it is given (console by default): a run it took over,
// a run it left for a decision, a run that failed, a lease it lost. The line's shape follows the logger's.

/** A console-shaped logger that keeps its lines, `<level> <message>`. */
function lines() {
  const said: string[] = [];
  const logger = {
    info: (message: string) => void said.push(`info ${message}`),
    warn: (message: string) => void said.push(`warn ${message}`),
    error: (message: string) => void said.push(`error ${message}`),
  };
  return { said, logger };
}

function serve(store: MemoryCheckpointStore, tools: Tools | ToolRegistry, logger: WorkerLogger) {
  return startWorker({
    serve: [runner(store, tools, { owner: "b", ms: 200 }).served(flow)],
    pollMs: 20,
    maxPollMs: 20,
    stopOnSignals: false,
    logger,
  });
}

/** Tickets tools whose charge fails for good, or hangs until its signal aborts (a drive that lost its run stops). */
function tools(charge: "fails" | "hangs") {
  const ran = { charge_card: 0 };
  const registry = new ToolRegistry()
    .tool("hold_seats", (a: { seats: number }) => `held ${a.seats}`, { idempotent: true })
    .tool("email_tickets", (a: { show: string }) => `mailed ${a.show}`)
    .tool("charge_card", async (_args: unknown, ctx) => {
      ran.charge_card++;
      if (charge === "fails") throw new NonRetryable("card declined");
      return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
    });
  return { ran, registry };
}

describe("the worker's log", () => {
  it("says once that it took over a dead worker's run, and once that a run waits for a decision", async () => {
    const data: MemoryData = new Map();
    const dead = new Tools();
    await inside(data, "hold_seats", dead, { ms: 200, die: true, runId: "r" });
    await inside(data, "charge_card", dead, { ms: 200, die: true, runId: "s" });
    const { said, logger } = lines();
    const w = serve(new MemoryCheckpointStore({ data }), dead, logger);
    await until(() => said.some((line) => line.includes("waits for a decision")) && said.length >= 3, 5_000).catch(
      (error: Error) => {
        throw new Error(`${error.message}; said: ${JSON.stringify(said)}`);
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await w.stop();
    expect(said.sort()).toEqual([
      'info @durable: flow "tickets": took over run r at step 1',
      'info @durable: flow "tickets": took over run s at step 2',
      expect.stringMatching(
        /^warn @durable: flow "tickets": run s waits for a decision: in doubt: charge_card \(2:pay:charge_card:/,
      ),
    ]);
  });

  it("says that a run failed, and that it lost a run another worker took", async () => {
    const store = new MemoryCheckpointStore();
    const { said, logger } = lines();
    const failing = tools("fails");
    const w = serve(store, failing.registry, logger);
    await runner(store, failing.registry).start(flow, order, { runId: "f" });
    await until(() => said.length === 1);
    await w.stop();
    expect(said).toEqual([
      'error @durable: flow "tickets": run f failed: ToolFailed: charge_card failed: NonRetryable: card declined',
    ]);

    const hanging = tools("hangs");
    const v = serve(store, hanging.registry, logger);
    await runner(store, hanging.registry).start(flow, order, { runId: "h" });
    await until(() => hanging.ran.charge_card === 1);
    // An operator takes the run over while the worker's charge runs: the charge is in doubt, and the worker's next
    // renewal is refused.
    const takeover = await runner(store, hanging.registry, { owner: "ops" })
      .recover(flow, "h", { takeOver: true })
      .catch((error: unknown) => error);
    expect(takeover).toBeInstanceOf(RecoveryNeedsDecision);
    await until(() => said.length === 2);
    await v.stop();
    expect(said[1]).toMatch(
      /^warn @durable: flow "tickets": lost run h: CheckpointConflict: .*this drive lost the run/,
    );
  });

  it("gives a pino-shaped logger fields then the message, and an OpenTelemetry Logger a record; false says nothing", async () => {
    const pino: [string, Record<string, unknown>, string][] = [];
    const pinoLike = {
      levels: { values: { info: 30 } },
      child: () => pinoLike,
      info: (fields: Record<string, unknown>, message: string) => void pino.push(["info", fields, message]),
      warn: (fields: Record<string, unknown>, message: string) => void pino.push(["warn", fields, message]),
      error: (fields: Record<string, unknown>, message: string) => void pino.push(["error", fields, message]),
    };
    const records: unknown[] = [];
    const otelLike = { emit: (record: unknown) => void records.push(record) };
    const { said, logger: plain } = lines();
    for (const [runId, logger] of [
      ["p", pinoLike],
      ["o", otelLike],
      ["n", false],
    ] as const) {
      const store = new MemoryCheckpointStore();
      const failing = tools("fails");
      const w = serve(store, failing.registry, logger);
      await runner(store, failing.registry).start(flow, order, { runId });
      await until(async () => (await store.latest(runId)).status === "failed");
      await new Promise((resolve) => setTimeout(resolve, 50));
      await w.stop();
    }
    const fields = { "durable.run.kind": "flow", "durable.run.name": "tickets", step: 3 };
    const message = 'flow "tickets": run p failed: ToolFailed: charge_card failed: NonRetryable: card declined';
    expect(pino).toEqual([["error", { "durable.run.id": "p", ...fields }, message]]);
    expect(records).toEqual([
      {
        severityNumber: 17,
        severityText: "ERROR",
        body: message.replace("run p", "run o"),
        attributes: { "durable.run.id": "o", ...fields },
      },
    ]);
    expect(said).toEqual([]);
    expect(plain).toBeDefined();
  });

  it("gives a winston logger (levels and child, but the message first) its message: it is no pino", async () => {
    // winston 3's level methods: one argument is the message (or an info object); with more, the first is the
    // message and the rest its splat (meta). Given fields first, the line would be the fields, its message lost.
    const said: { level: string; message: unknown }[] = [];
    const level = (name: string) => (message: unknown) => void said.push({ level: name, message });
    const winstonLike = {
      levels: { error: 0, warn: 1, info: 2, debug: 5 },
      child: () => winstonLike,
      info: level("info"),
      warn: level("warn"),
      error: level("error"),
    };
    const store = new MemoryCheckpointStore();
    const failing = tools("fails");
    const w = serve(store, failing.registry, winstonLike);
    await runner(store, failing.registry).start(flow, order, { runId: "w" });
    await until(() => said.length === 1);
    await w.stop();
    expect(said).toEqual([
      {
        level: "error",
        message: '@durable: flow "tickets": run w failed: ToolFailed: charge_card failed: NonRetryable: card declined',
      },
    ]);
  });

  it("refuses a logger of no known shape with InvalidInput, before it starts", () => {
    const store = new MemoryCheckpointStore();
    for (const logger of [{}, { info: () => undefined }, "console", true])
      expect(() => serve(store, new Tools(), logger as never)).toThrow(InvalidInput);
  });
});
