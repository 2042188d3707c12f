/**
 * One order, as a flow and as a tool loop, for the tests of what both share
 * through core's run driver. Both make the same calls in the same rounds:
 * round 1 holds seats (idempotent) and charges a card at once; round 2 asks
 * for a refund that needs an approval, so the run pauses there.
 */
import { z } from "zod";
import type { RunKind } from "@durable/core/store";
import { type CheckpointStore, type DurableEvent, Executor, type Identity, ToolRegistry } from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { Call, Flow, FlowRunner } from "@durable/flow";
import {
  recoverAllToolLoops,
  recoverToolLoop,
  runToolLoop,
  type LoopModel,
  type Message,
  type ModelReply,
} from "../src/index.js";
import type { Tools } from "@durable/test-utils/tools";

export const KEY = "driver-tests-key-0123456789abcdef-xyz";

const HOLD = { seats: 2 };
const CHARGE = { cents: 4200 };
const REFUND = { cents: 1200 };

/** What a test passes to a program's entry points. */
export interface Options {
  readonly ctx?: Identity;
  readonly rerunInDoubt?: boolean;
  readonly takeOver?: boolean;
  readonly events?: DurableEvent[];
  /** Another flow or loop name than the program's own. */
  readonly name?: string;
}

/** What a run returned, as both programs shape it. */
export type Outcome = {
  readonly status: "done" | "paused" | "asleep" | "awaiting-user";
  readonly runId: string;
  readonly step: number;
  readonly approvals?: ReadonlyArray<{ readonly callId: string }>;
};

/** One program's entry points on a store. */
export interface Worker {
  start(runId: string, options?: Options): Promise<Outcome>;
  recover(runId: string, options?: Options): Promise<Outcome>;
  recoverAll(options?: Options): Promise<Map<string, Outcome | Error>>;
  resume(runId: string, decisions: Record<string, boolean>, options?: Options): Promise<Outcome>;
}

/** A program under test. */
export interface Program {
  readonly kind: RunKind;
  /** The steps of the checkpoints a run saves before it pauses, by what each is. */
  readonly checkpoints: ReadonlyArray<readonly [what: string, step: number]>;
  /** The step a resume's claim is saved as. */
  readonly resumeClaim: number;
  /** The id of each call. */
  readonly ids: { readonly hold: string; readonly charge: string; readonly refund: string };
  /** A worker on `store`; with `failTools`, a tool's error fails the run (a loop's `toolErrors: "fail"`). */
  on(store: CheckpointStore, registry: ToolRegistry, failTools?: boolean): Worker;
}

/** The tools of the order, counting their runs; `tools.hangInside` makes one hang, as in a worker that died inside it. */
export function orderTools(tools: Tools, charge: () => unknown = () => "charged"): ToolRegistry {
  return new ToolRegistry()
    .tool(
      "hold",
      tools.tool("hold", () => "held"),
      { idempotent: true },
    )
    .tool("charge", tools.tool("charge", charge))
    .tool(
      "refund",
      tools.tool("refund", () => "refunded"),
      { approval: true },
    );
}

/** A test's options as a flow's recover and resume take them: the runner's own (events) and the flow's name left out. */
const recovering = ({ events: _events, name: _name, ...options }: Options) => options;

const sink = (options: Options) =>
  options.events === undefined ? {} : { events: (e: DurableEvent) => void options.events!.push(e) };

const State = z.object({ held: z.string(), charged: z.string(), refunded: z.string() });

function orderFlow(name: string) {
  return new Flow(name, { state: State })
    .node("order", async (_, ctx) => {
      const [held, charged] = await Promise.all([ctx.call("hold", HOLD), ctx.call("charge", CHARGE)]);
      return { held: String(held), charged: String(charged) };
    })
    .node("refund", new Call("refund", { args: () => REFUND, into: "refunded" }))
    .edge("order", "refund")
    .end("refund");
}

export const flowProgram: Program = {
  kind: "flow",
  checkpoints: [
    ["start", 0],
    ["superstep", 1],
  ],
  resumeClaim: 3,
  ids: {
    hold: callIdOf(1, "order", "hold", HOLD),
    charge: callIdOf(1, "order", "charge", CHARGE),
    refund: callIdOf(2, "refund", "refund", REFUND),
  },
  on(store, registry) {
    const flow = (options: Options) => orderFlow(options.name ?? "orders");
    const runner = (options: Options) =>
      new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, ...sink(options) });
    return {
      start: (runId, options = {}) =>
        runner(options).run(
          flow(options),
          { held: "", charged: "", refunded: "" },
          { runId, ...(options.ctx === undefined ? {} : { ctx: options.ctx }) },
        ),
      recover: (runId, options = {}) => runner(options).recover(flow(options), runId, recovering(options)),
      recoverAll: (options = {}) => runner(options).recoverAll(flow(options), recovering(options)),
      resume: (runId, decisions, options = {}) =>
        runner(options).resume(flow(options), runId, decisions, recovering(options)),
    };
  },
};

/** Answers from the history alone, so a model asked again on another worker says the same. */
const orderModel: LoopModel = {
  async reply(messages: readonly Message[]): Promise<ModelReply> {
    const turns = messages.filter((m) => m.role === "assistant").length;
    if (turns === 0) {
      return {
        text: "ordering",
        toolCalls: [
          { id: "h1", name: "hold", args: HOLD },
          { id: "c1", name: "charge", args: CHARGE },
        ],
      };
    }
    if (turns === 1) return { text: "refunding", toolCalls: [{ id: "r1", name: "refund", args: REFUND }] };
    return { text: "done", toolCalls: [] };
  },
};

export const loopProgram: Program = {
  kind: "loop",
  checkpoints: [
    ["start", 0],
    ["model-reply", 1],
    ["tool-results", 2],
    ["model-reply", 3],
  ],
  resumeClaim: 5,
  ids: {
    hold: callIdOf(1, "h1", "hold", HOLD),
    charge: callIdOf(1, "c1", "charge", CHARGE),
    refund: callIdOf(2, "r1", "refund", REFUND),
  },
  on(store, registry, failTools = false) {
    const options = (given: Options) => ({
      checkpoints: store,
      checkpointKey: KEY,
      name: given.name ?? "orders",
      toolErrors: failTools ? ("fail" as const) : ("model" as const),
      ...(given.ctx === undefined ? {} : { ctx: given.ctx }),
      ...(given.rerunInDoubt === undefined ? {} : { rerunInDoubt: given.rerunInDoubt }),
      ...(given.takeOver === undefined ? {} : { takeOver: given.takeOver }),
      ...sink(given),
    });
    const ask: Message[] = [{ role: "user", content: "two seats, then refund 12" }];
    return {
      start: (runId, given = {}) => runToolLoop(orderModel, registry, ask, { ...options(given), runId }),
      recover: (runId, given = {}) => recoverToolLoop(orderModel, registry, runId, options(given)),
      recoverAll: (given = {}) => recoverAllToolLoops(orderModel, registry, options(given)),
      resume: (runId, answers, given = {}) =>
        runToolLoop(orderModel, registry, [], { ...options(given), runId, answers }),
    };
  },
};

export const PROGRAMS: readonly Program[] = [flowProgram, loopProgram];
