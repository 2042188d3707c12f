import { readFileSync } from "node:fs";
import { MemoryCheckpointStore, sendEvent, startWorker, ToolRegistry } from "@durable/core";
import { readLatest, Sealer } from "@durable/core/runner";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { refundFlow } from "../examples/refund-flow.js";
import { refund } from "../examples/refund-workflow.js";
import { KEY, runnerOn } from "./helpers.js";

// The refund of the README, written as a flow and as a function: the same calls, the same waits, the same outcomes.

/** The refund's tools, each counting what it really did. */
function refundTools(cents: number) {
  const did: string[] = [];
  const registry = new ToolRegistry()
    .tool("fetch_quote", (args: { orderId: string }) => {
      did.push(`quote ${args.orderId}`);
      return { cents };
    })
    .tool("issue_refund", (args: { orderId: string; cents: number }) => {
      did.push(`refund ${args.cents}`);
      return `receipt-${args.orderId}`;
    })
    .tool("email_customer", (args: { receipt: string }) => void did.push(`email ${args.receipt}`));
  return { did, registry };
}

type RefundState = { output?: unknown; refunded?: boolean; receipt?: string; why?: string };

const shapes = [
  { shape: "a function", flow: refund, outcome: (state: RefundState) => state.output },
  {
    shape: "a flow",
    flow: refundFlow,
    outcome: (state: RefundState) =>
      state.refunded ? { refunded: true, receipt: state.receipt } : { refunded: false, why: state.why },
  },
] as const;

/** The state of a done run's result. */
const stateOf = (result: unknown) => (result as { state: RefundState }).state;

describe.each(shapes)("the refund written as $shape", ({ flow, outcome }) => {
  const input = { orderId: "o-1", reason: "arrived broken" };

  it("refunds a small order at once, each tool once", async () => {
    const { did, registry } = refundTools(1_200);
    const done = await runnerOn(new MemoryCheckpointStore(), registry).run(flow as never, input);
    expect(done).toMatchObject({ status: "done" });
    expect(outcome(stateOf(done))).toEqual({ refunded: true, receipt: "receipt-o-1" });
    expect(did).toEqual(["quote o-1", "refund 1200", "email receipt-o-1"]);
  });

  it("waits for a manager on a large one, holding no worker; a worker refunds it once the approval is sent", async () => {
    const { did, registry } = refundTools(90_000);
    const store = new MemoryCheckpointStore();
    const waiting = await runnerOn(store, registry).run(flow as never, input, { runId: "big" });
    expect(waiting).toMatchObject({ status: "asleep", waitsFor: ["manager-approval"] });
    const worker = startWorker({
      serve: [runnerOn(store, registry).served(flow as never)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      const approval = { checkpoints: store, checkpointKey: KEY, runId: "big", name: "manager-approval" };
      await sendEvent({ ...approval, payload: "approve", idempotencyKey: "mgr-1" });
      await until(async () => (await store.latest("big")).status === "done", 5_000);
    } finally {
      await worker.stop();
    }
    const done = await readLatest(store, Sealer.withKeys(KEY), "big");
    const { program } = done.data as { program: { state: RefundState } };
    expect(outcome(program.state)).toEqual({ refunded: true, receipt: "receipt-o-1" });
    // The quote was fetched once, before the wait: the woken run replayed it.
    expect(did).toEqual(["quote o-1", "refund 90000", "email receipt-o-1"]);
  });

  it("refunds nothing when the manager declines", async () => {
    const { did, registry } = refundTools(90_000);
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(flow as never, input, { runId: "no" });
    await sendEvent({ checkpoints: store, checkpointKey: KEY, runId: "no", name: "manager-approval", payload: "no" });
    const done = await runnerOn(store, registry).recover(flow as never, "no");
    expect(outcome(stateOf(done))).toEqual({ refunded: false, why: "a manager declined" });
    expect(did).toEqual(["quote o-1"]);
  });
});

describe("the flow README", () => {
  it("shows both refunds as the examples that these tests run", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    for (const example of ["refund-workflow.ts", "refund-flow.ts"]) {
      const code = readFileSync(new URL(`../examples/${example}`, import.meta.url), "utf8");
      expect(readme, `README.md shows examples/${example}`).toContain(
        code.replaceAll('"../src/index.js"', '"@durable/flow"'),
      );
    }
  });
});
