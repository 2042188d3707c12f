import { appendFileSync } from "node:fs";
import {
  type InDoubtDecisions,
  CheckpointNotFound,
  type CheckpointStore,
  Executor,
  type JsonValue,
  RecoveryNeedsDecision,
  StoreUnavailable,
  type ToolContext,
  ToolRegistry,
} from "@durable/core";
import { faultPoint } from "@durable/core/internal";
import {
  callIdOf,
  type CallRecord,
  canonicalJson,
  DurableRun,
  readEnvelope,
  type RunEnvelope,
  Sealer,
} from "@durable/core/runner";
import type { RunWrite, RunAnchor } from "@durable/core/store";
import { Call, Flow, FlowRunner, type FlowOptions, type FlowResult } from "@durable/flow";
import {
  recoverToolLoop,
  runToolLoop,
  type LoopModel,
  type LoopResult,
  type Message,
  type ModelReply,
} from "@durable/loop";
import { isEncryptedRun, KIT_ENCRYPTION_KEY, KIT_KEY } from "../harness/harness.js";
import { intercepted } from "./intercepted.js";

/**
 * The runs the crash, race and tamper groups drive: a flow of three supersteps
 * (one call, a fan-out of three, an approval) and a tool loop (two calls at
 * once, then an approval). Every tool appends `<runId> <callId> <tool> <attempt>`
 * to a side-effect file as it runs, so executions are counted across processes.
 * One tool of each retries: its first attempt fails (after its side effect),
 * so every run goes through a `failed` record, a wait and a second attempt.
 */
export type ScenarioName = "flow" | "loop" | "charge-with-refund";

/** The scenarios every crash trial runs; `charge-with-refund` serves one tamper case of its own. */
export const SCENARIOS: readonly ScenarioName[] = ["flow", "loop"];

/** Tools whose calls rerun without a decision when they are in doubt. */
export const IDEMPOTENT_TOOLS: ReadonlySet<string> = new Set(["reserve", "audit"]);

const ORDER = "order-1";

/** The non-idempotent tool of each scenario that fails its first attempt and succeeds at its second. */
const RETRIED: Readonly<Record<ScenarioName, string | undefined>> = {
  flow: "notify",
  loop: "charge",
  "charge-with-refund": undefined,
};

/** The retried tool's policy: one more attempt after a short, fixed wait. */
const RETRY = { attempts: 2, initialDelayMs: 10, jitter: 0 } as const;

/** How many attempts a call of `tool` makes in a run of the scenario (each but the last fails). */
export function attemptsOf(scenario: ScenarioName, tool: string): number {
  return RETRIED[scenario] === tool ? RETRY.attempts : 1;
}

/** Every call of each scenario, by call id (round, node or the model's tool-call id, tool, arguments), with its tool. */
export const CALLS: Readonly<Record<ScenarioName, ReadonlyMap<string, string>>> = {
  flow: new Map([
    [callIdOf(1, "reserve", "reserve", { order: ORDER }), "reserve"],
    [callIdOf(2, "charge", "charge", { order: ORDER, cents: 4200 }), "charge"],
    [callIdOf(2, "notify", "notify", { order: ORDER }), "notify"],
    [callIdOf(2, "audit", "audit", { order: ORDER }), "audit"],
    [callIdOf(3, "refund", "refund", { order: ORDER, cents: 1200 }), "refund"],
  ]),
  "charge-with-refund": new Map([
    [callIdOf(1, "order", "refund", { order: ORDER, cents: 1200 }), "refund"],
    [callIdOf(1, "order", "charge", { order: ORDER, cents: 4200 }), "charge"],
  ]),
  loop: new Map([
    [callIdOf(1, "charge-1", "charge", { order: ORDER, cents: 4200 }), "charge"],
    [callIdOf(1, "audit-1", "audit", { order: ORDER }), "audit"],
    [callIdOf(2, "refund-1", "refund", { order: ORDER, cents: 1200 }), "refund"],
  ]),
};

/** Opens the kit's runs, encrypted or not. */
const sealer: Sealer = Sealer.withKeys(KIT_KEY, KIT_ENCRYPTION_KEY);

/** The tools, writing their executions to `effects`; `retried` fails its first attempt and retries. */
function scenarioTools(effects: string, retried: string | undefined): ToolRegistry {
  const tool = (name: string) => (args: JsonValue, ctx: ToolContext) => {
    appendFileSync(effects, `${ctx.runId} ${ctx.callId} ${name} ${ctx.attempt}\n`);
    faultPoint("tool.inside");
    if (name === retried && ctx.attempt < RETRY.attempts) throw new Error(`${name} fails its attempt ${ctx.attempt}`);
    return `${name} ${canonicalJson(args)}`;
  };
  const retry = (name: string) => (name === retried ? { retry: RETRY } : {});
  return new ToolRegistry()
    .tool("reserve", tool("reserve"), { idempotent: true })
    .tool("charge", tool("charge"), retry("charge"))
    .tool("notify", tool("notify"), retry("notify"))
    .tool("audit", tool("audit"), { idempotent: true })
    .tool("refund", tool("refund"), { approval: true });
}

interface CrashState {
  order: string;
  reserved?: string;
  charged?: string;
  notified?: string;
  audited?: string;
  refunded?: string;
}

const state: FlowOptions<CrashState>["state"] = {
  "~standard": {
    version: 1,
    vendor: "durable-conformance",
    validate: (value) =>
      typeof value === "object" && value !== null && typeof (value as { order?: unknown }).order === "string"
        ? { value: value as CrashState }
        : { issues: [{ message: "needs an order" }] },
  },
};

const order = (s: CrashState) => ({ order: s.order });

const crashFlow: Flow<CrashState> = new Flow("conformance-flow", { state })
  .node("reserve", new Call("reserve", { args: order, into: "reserved" }))
  .node("charge", new Call("charge", { args: (s) => ({ order: s.order, cents: 4200 }), into: "charged" }))
  .node("notify", new Call("notify", { args: order, into: "notified" }))
  .node("audit", new Call("audit", { args: order, into: "audited" }))
  .node("refund", new Call("refund", { args: (s) => ({ order: s.order, cents: 1200 }), into: "refunded" }))
  .edge("reserve", ["charge", "notify", "audit"])
  .edge(["charge", "notify", "audit"], "refund")
  .end("refund");

/**
 * One superstep that asks for a refund's approval and charges at once: the
 * run pauses with the charge done and counted, in the round it resumes.
 */
const chargeWithRefundFlow: Flow<CrashState> = new Flow("conformance-charge-with-refund", { state })
  .node("order", async (s, ctx) => {
    const [refunded, charged] = await Promise.all([
      ctx.call("refund", { order: s.order, cents: 1200 }),
      ctx.call("charge", { order: s.order, cents: 4200 }),
    ]);
    return { refunded: String(refunded), charged: String(charged) };
  })
  .end("order");

/** Answers from the history alone, so a model asked again in another process says the same. */
const crashModel: LoopModel = {
  async reply(messages: readonly Message[]): Promise<ModelReply> {
    const turns = messages.filter((m) => m.role === "assistant").length;
    if (turns === 0) {
      return {
        text: "charging",
        toolCalls: [
          { id: "charge-1", name: "charge", args: { order: ORDER, cents: 4200 } },
          { id: "audit-1", name: "audit", args: { order: ORDER } },
        ],
      };
    }
    if (turns === 1)
      return {
        text: "refunding",
        toolCalls: [{ id: "refund-1", name: "refund", args: { order: ORDER, cents: 1200 } }],
      };
    const results = messages.filter((m) => m.role === "tool").map((m) => m.content);
    return { text: `done: ${results.join("; ")}`, toolCalls: [] };
  },
};

const LOOP_NAME = "conformance-loop";

/** Who the crash trials' decisions on calls in doubt are recorded as made by. */
const DECIDER = "conformance-kit";

/** The decisions a recovery is given: none, or a decision on each call in doubt. */
interface RecoveryDecisions {
  readonly decide?: InDoubtDecisions;
  readonly by?: string;
}

/** What `recoverToEnd` took: its tries (more than one when the store was unavailable) and how many of them reported each call in doubt. */
export interface Recovery {
  readonly tries: number;
  readonly reported: Readonly<Record<string, number>>;
  /**
   * The calls of the first report, when it came before recovery issued any
   * record of the run: then it says what the killed worker alone left in
   * doubt. Absent when recovery wrote first, or the driver counts no records.
   */
  readonly firstReport?: readonly string[];
}

/**
 * Drives a scenario's run; every call goes through `store` with the kit's
 * key, and a run whose id says so (`isEncryptedRun`) is encrypted too.
 */
export class ScenarioDriver {
  readonly #store: CheckpointStore;
  readonly #loopTools: ToolRegistry;
  readonly #flowRunners: { readonly plain: FlowRunner; readonly encrypted: FlowRunner };
  readonly #anchor: RunAnchor | undefined;
  readonly #issued: ((runId: string) => number) | undefined;

  /**
   * With `anchor`, every run is written through it and checked against it (the anchor group). `issued` counts
   * the records of a run the workers have issued, so `recoverToEnd` tells a first report made before it wrote.
   */
  constructor(store: CheckpointStore, effects: string, anchor?: RunAnchor, issued?: (runId: string) => number) {
    this.#store = store;
    this.#anchor = anchor;
    this.#issued = issued;
    this.#loopTools = scenarioTools(effects, RETRIED.loop);
    const executor = new Executor(scenarioTools(effects, RETRIED.flow));
    const options = { checkpoints: store, checkpointKey: KIT_KEY, ...(anchor === undefined ? {} : { anchor }) };
    this.#flowRunners = {
      plain: new FlowRunner(executor, options),
      encrypted: new FlowRunner(executor, { ...options, encryptionKey: KIT_ENCRYPTION_KEY }),
    };
  }

  /** The flow runner for the run: encrypting or not, as its id says. */
  #runner(runId: string): FlowRunner {
    return isEncryptedRun(runId) ? this.#flowRunners.encrypted : this.#flowRunners.plain;
  }

  /** Starts a run and takes it to the end, approving what it pauses for. */
  async run(scenario: ScenarioName, runId: string): Promise<void> {
    if (scenario !== "loop") {
      const flow = flowOf(scenario);
      await this.#finishFlow(flow, await this.#runner(runId).run(flow, { order: ORDER }, { runId }));
    } else {
      await this.#finishLoop(
        await runToolLoop(crashModel, this.#loopTools, [{ role: "user", content: ORDER }], {
          ...this.#loopOptions(runId),
          runId,
        }),
      );
    }
  }

  /**
   * Recovers a run as far as it gets without deciding on calls in doubt (the
   * result only, no approvals). Every recovery here takes over the lease: the
   * kit killed the worker that held it, as an operator would know.
   */
  async recoverOnce(scenario: ScenarioName, runId: string, rerunInDoubt = false): Promise<string> {
    const options = { rerunInDoubt, takeOver: true };
    if (scenario !== "loop") return (await this.#runner(runId).recover(flowOf(scenario), runId, options)).status;
    return (await recoverToolLoop(crashModel, this.#loopTools, runId, { ...this.#loopOptions(runId), ...options }))
      .status;
  }

  /**
   * Takes a crashed run to the end: starts it when nothing was saved, recovers
   * it, and when recovery reports calls in doubt, recovers it again with a
   * decision to rerun each (recorded in the log before it runs). A store that
   * was unavailable is given two more tries, as an operator would: a try it
   * failed may have run a call it then could not record, which the next try
   * finds in doubt and reports again.
   */
  async recoverToEnd(scenario: ScenarioName, runId: string): Promise<Recovery> {
    const issuedBefore = this.#issued?.(runId);
    const recovery: { tries: number; reported: Record<string, number>; firstReport?: string[] } = {
      tries: 1,
      reported: {},
    };
    const report = (callIds: string[]) => {
      const first = Object.keys(recovery.reported).length === 0;
      if (first && issuedBefore !== undefined && this.#issued?.(runId) === issuedBefore) recovery.firstReport = callIds;
      for (const callId of callIds) recovery.reported[callId] = (recovery.reported[callId] ?? 0) + 1;
    };
    for (; ; recovery.tries++) {
      try {
        await this.#recoverToEnd(scenario, runId, report);
        return recovery;
      } catch (error) {
        if (!(error instanceof StoreUnavailable) || recovery.tries >= 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000 * recovery.tries));
      }
    }
  }

  /** One try of `recoverToEnd`; tells `report` the calls it finds in doubt, before it decides them. */
  async #recoverToEnd(scenario: ScenarioName, runId: string, report: (callIds: string[]) => void): Promise<void> {
    try {
      await this.#recoverAndFinish(scenario, runId, {});
    } catch (error) {
      if (error instanceof CheckpointNotFound) return this.run(scenario, runId);
      if (!(error instanceof RecoveryNeedsDecision)) throw error;
      const inDoubt = error.calls.map(({ callId }) => callId).sort();
      report(inDoubt);
      const decide = Object.fromEntries(inDoubt.map((callId) => [callId, "rerun" as const]));
      await this.#recoverAndFinish(scenario, runId, { decide, by: DECIDER });
    }
  }

  async #recoverAndFinish(scenario: ScenarioName, runId: string, decisions: RecoveryDecisions): Promise<void> {
    const latest = await DurableRun.latest(this.#store, sealer, runId);
    if (latest.status === "done") return;
    const options = { ...decisions, takeOver: true };
    if (scenario !== "loop")
      await this.#finishFlow(flowOf(scenario), await this.#runner(runId).recover(flowOf(scenario), runId, options));
    else
      await this.#finishLoop(
        await recoverToolLoop(crashModel, this.#loopTools, runId, { ...this.#loopOptions(runId), ...options }),
      );
  }

  async #finishFlow(flow: Flow<CrashState>, result: FlowResult<CrashState>): Promise<void> {
    while (result.status === "paused") {
      result = await this.#runner(result.runId).resume(flow, result.runId, approveAll(result.approvals));
    }
  }

  async #finishLoop(result: LoopResult): Promise<void> {
    while (result.status === "paused") {
      const options = {
        ...this.#loopOptions(result.runId),
        runId: result.runId,
        answers: approveAll(result.approvals),
      };
      result = await runToolLoop(crashModel, this.#loopTools, [], options);
    }
  }

  /** The options every loop entry point takes for the run (`runToolLoop` adds its `runId`). */
  #loopOptions(runId: string) {
    const encryption = isEncryptedRun(runId) ? { encryptionKey: KIT_ENCRYPTION_KEY } : {};
    const anchor = this.#anchor === undefined ? {} : { anchor: this.#anchor };
    return { checkpoints: this.#store, checkpointKey: KIT_KEY, name: LOOP_NAME, ...encryption, ...anchor };
  }
}

function flowOf(scenario: Exclude<ScenarioName, "loop">): Flow<CrashState> {
  return scenario === "flow" ? crashFlow : chargeWithRefundFlow;
}

function approveAll(approvals: ReadonlyArray<{ readonly callId: string }>): Record<string, boolean> {
  return Object.fromEntries(approvals.map((a) => [a.callId, true]));
}

/** What a finished run ended with: the data of its last checkpoint (the driver's envelope), which a crash must not change. */
export async function finalData(store: CheckpointStore, runId: string): Promise<{ status: string; data: RunEnvelope }> {
  const latest = await DurableRun.latest(store, sealer, runId);
  return { status: latest.status, data: readEnvelope(runId, latest.data) };
}

export { sealer as kitSealer };

/**
 * The store as a worker sees it whose connection is lost for good at the first
 * call record of one of `tools`: what it wrote before that record lands (a
 * batch holding it lands up to it), that record and nothing after it does.
 * The run is left cut short, as a dead worker leaves it, and the runner
 * returns `StoreUnavailable`.
 */
export function cutShort(store: CheckpointStore, tools: ReadonlySet<string>): CheckpointStore {
  const cut = (id: string, write: RunWrite) =>
    write.kind === "record" &&
    tools.has((sealer.open("call", write.sealed, { runId: id, ...write }) as unknown as CallRecord).tool);
  const lost = () => new StoreUnavailable("the kit cut this worker off");
  return intercepted(store, {
    async recordCall(id, segment, seq, sealed) {
      if (cut(id, { kind: "record", segment, seq, sealed })) throw lost();
      return store.recordCall(id, segment, seq, sealed);
    },
    async commit(id, writes) {
      const at = writes.findIndex((w) => cut(id, w));
      if (at === -1) return store.commit?.(id, writes);
      const before = writes.slice(0, at);
      if (before.length > 0) await store.commit?.(id, before);
      throw lost();
    },
  });
}
