import {
  CheckpointConflict,
  FlowError,
  newRunId,
  type Decisions,
  type CheckpointKeys,
  type CheckpointStore,
  type EventSink,
  type Executor,
  type Identity,
  type JsonObject,
  type RunStatus,
} from "@durable/core";
import {
  CallScope,
  DurableRun,
  bindDecisions,
  checkExecutor,
  checkRunnerOptions,
  emit,
  faultPoint,
  freshPlan,
  identityOf,
  leavesRunForRecovery,
  planReplay,
  resumeIdentity,
  sealerFor,
  type CheckpointBody,
  type ReplayPlan,
  type Sealer,
} from "@durable/core/runner";
import type { Flow } from "./flow.js";
import { readFlowData, toJson, type Approval, type FlowData } from "./flow-data.js";
import { checkStoredState, settleState } from "./schema.js";
import { runSuperstep } from "./superstep.js";

/** Where a run stands when `run`, `recover` or `resume` returns. */
export type FlowResult<S> =
  | { readonly status: "done"; readonly runId: string; readonly step: number; readonly state: S }
  | { readonly status: "paused"; readonly runId: string; readonly step: number; readonly approvals: readonly Approval[] };

/** Options of `FlowRunner`. */
export interface FlowRunnerOptions {
  readonly checkpoints: CheckpointStore;
  /** At least 32 bytes, the same on every worker; a list rotates keys (the first signs). Required unless the store is in-process only. */
  readonly checkpointKey?: CheckpointKeys;
  readonly events?: EventSink;
}

/** Options of `run`. */
export interface RunOptions {
  /** Default: `newRunId()`. */
  readonly runId?: string;
  /** The end user, thread and principal the run acts for; sealed into every checkpoint. */
  readonly ctx?: Identity;
}

/** Options of `recover` and `recoverAll`. */
export interface RecoverOptions {
  /** Must name the run's own identity; without it the stored user and thread are restored. */
  readonly ctx?: Identity;
  /** Run calls in doubt again instead of raising `RecoveryNeedsDecision`. */
  readonly rerunInDoubt?: boolean;
}

/**
 * Runs flows durably: a sealed checkpoint after every superstep, every tool
 * call through the call log, recovery from the last checkpoint on any worker.
 */
export class FlowRunner {
  readonly executor: Executor;
  readonly store: CheckpointStore;
  readonly #sealer: Sealer;
  readonly #events: EventSink | undefined;

  constructor(executor: Executor, options: FlowRunnerOptions) {
    checkExecutor("FlowRunner", executor);
    checkRunnerOptions("FlowRunner", options);
    this.executor = executor;
    this.store = options.checkpoints;
    this.#sealer = sealerFor(options.checkpoints, options.checkpointKey);
    this.#events = options.events;
  }

  /** Starts a run from `input` (validated with the flow's schema) and runs it until it is done or paused. */
  async run<S>(flow: Flow<S>, input: unknown, options: RunOptions = {}): Promise<FlowResult<S>> {
    this.#checkTools(flow);
    const state = await settleState(flow.schema, input, `The input of flow ${flow.name}`);
    const data: FlowData = {
      state: state as JsonObject,
      frontier: [flow.graph.entry],
      visits: {},
      waiting: {},
      digest: flow.digest,
      round: 1,
      pending: [],
      decisions: [],
    };
    const { run, checkpoint } = await DurableRun.start({
      store: this.store,
      sealer: this.#sealer,
      runId: options.runId ?? newRunId(),
      flow: flow.name,
      kind: "flow",
      identity: identityOf(options.ctx),
      data: toJson(data),
    });
    await this.#saved(flow, checkpoint);
    return this.#drive(flow, run, data, state, freshPlan(1), false);
  }

  /**
   * Goes on with a run from its last checkpoint: claims it (one worker wins),
   * replays finished calls, and fails closed on calls in doubt. A paused run
   * comes back as its paused result.
   */
  async recover<S>(flow: Flow<S>, runId: string, options: RecoverOptions = {}): Promise<FlowResult<S>> {
    const { latest, data } = await this.#latest(flow, runId, options.ctx);
    if (latest.status === "paused") return paused(latest, data);
    const state = await this.#stored(flow, runId, data);
    const { run, checkpoint, records } = await DurableRun.claim(this.store, this.#sealer, latest);
    await this.#saved(flow, checkpoint);
    const plan = planReplay(runId, records, data.round, this.executor.registry, options);
    return this.#drive(flow, run, data, state, plan, true);
  }

  /** Recovers every unfinished run of the flow, mapping each run id to its result or to the error that stopped it. */
  async recoverAll<S>(flow: Flow<S>, options: RecoverOptions = {}): Promise<Map<string, FlowResult<S> | Error>> {
    const results = new Map<string, FlowResult<S> | Error>();
    for await (const runId of this.store.listUnfinished(flow.name)) {
      try {
        results.set(runId, await this.recover(flow, runId, options));
      } catch (error) {
        results.set(runId, error instanceof Error ? error : new Error(String(error)));
      }
    }
    return results;
  }

  /**
   * Resumes a paused run with decisions on its pending approvals. The
   * decisions are stored with the next checkpoint before any is spent, so one
   * resume wins: a second one of the same pause is `CheckpointConflict`.
   */
  async resume<S>(flow: Flow<S>, runId: string, decisions: Decisions, options: RecoverOptions = {}): Promise<FlowResult<S>> {
    const { latest, data } = await this.#latest(flow, runId, options.ctx);
    if (latest.status !== "paused") throw new CheckpointConflict(runId, `the run is ${latest.status}, not paused: there is nothing to resume.`);
    const bound = bindDecisions(runId, data.pending, decisions);
    const withDecisions: FlowData = { ...data, pending: [], decisions: [...data.decisions, ...bound] };
    const state = await this.#stored(flow, runId, data);
    faultPoint("resume.before-decision-save");
    const { run, checkpoint, records } = await DurableRun.claim(this.store, this.#sealer, latest, toJson(withDecisions));
    faultPoint("resume.after-decision-save");
    await this.#saved(flow, checkpoint);
    const plan = planReplay(runId, records, data.round, this.executor.registry, options);
    return this.#drive(flow, run, withDecisions, state, plan, false);
  }

  /** Runs supersteps until the run is done or paused; saves it as failed when a node or tool fails. */
  async #drive<S>(flow: Flow<S>, run: DurableRun, data: FlowData, state: S, plan: ReplayPlan, recovered: boolean): Promise<FlowResult<S>> {
    for (;;) {
      const decisions = new Map(data.decisions.map((d) => [d.callId, d]));
      const scope = new CallScope({ kind: "flow", log: run.log, plan, identity: run.identity, decisions, events: this.#events });
      let next: FlowData | undefined;
      try {
        const outcome = await runSuperstep(flow, this.executor, scope, data, state);
        if (!outcome.paused) {
          state = await settleState(flow.schema, outcome.state, `The state after superstep ${data.round} of run ${run.runId}`);
          next = { ...outcome, state: state as JsonObject, digest: data.digest, round: data.round + 1, pending: [], decisions: [] };
        }
      } catch (error) {
        throw await this.#fail(flow, run, data, error);
      } finally {
        if (recovered) {
          recovered = false;
          await emit(this.#events, { type: "run.recovered", runId: run.runId, kind: "flow", step: run.step, replayed: scope.replayed, rerun: scope.rerun });
        }
      }
      if (next === undefined) return this.#pause(flow, run, data, scope);
      const status: RunStatus = next.frontier.length === 0 ? "done" : "running";
      let checkpoint: CheckpointBody;
      try {
        checkpoint = await run.save(status, toJson(next));
      } catch (error) {
        throw await this.#fail(flow, run, data, error);
      }
      await this.#saved(flow, checkpoint, scope);
      if (status === "done") {
        await emit(this.#events, { type: "run.done", runId: run.runId, kind: "flow", step: checkpoint.step });
        return { status: "done", runId: run.runId, step: checkpoint.step, state };
      }
      data = next;
      plan = freshPlan(data.round);
    }
  }

  /** Saves a paused checkpoint that keeps the superstep's starting point and lists the calls waiting on approvals. */
  async #pause<S>(flow: Flow<S>, run: DurableRun, data: FlowData, scope: CallScope): Promise<FlowResult<S>> {
    const pending = scope.pending.map(({ callId, tool, args }) => ({ callId, tool, args }));
    const checkpoint = await run.save("paused", toJson({ ...data, pending }));
    await this.#saved(flow, checkpoint); // the round is not complete: which finished calls it will claim is not known yet
    await emit(this.#events, { type: "run.paused", runId: run.runId, kind: "flow", step: checkpoint.step, approvals: pending });
    return { status: "paused", runId: run.runId, step: checkpoint.step, approvals: pending };
  }

  /**
   * Saves the run as failed for an error of a node or tool, and returns the
   * error to throw. Errors of the durable machinery (a lost claim, a store that
   * did not answer, a call in doubt) leave the run as it stands for recovery.
   */
  async #fail<S>(flow: Flow<S>, run: DurableRun, data: FlowData, error: unknown): Promise<unknown> {
    if (leavesRunForRecovery(error)) return error;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    try {
      const checkpoint = await run.save("failed", toJson({ ...data, pending: [], decisions: [], error: message }));
      await this.#saved(flow, checkpoint);
      await emit(this.#events, { type: "run.failed", runId: run.runId, kind: "flow", step: checkpoint.step, error: message });
    } catch (saveError) {
      return saveError;
    }
    return error;
  }

  async #latest<S>(flow: Flow<S>, runId: string, ctx: Identity | undefined): Promise<{ latest: CheckpointBody; data: FlowData }> {
    this.#checkTools(flow);
    const latest = await DurableRun.latest(this.store, this.#sealer, runId);
    resumeIdentity(runId, latest.identity, ctx); // first: a caller with someone else's ctx learns nothing of the run
    if (latest.kind !== "flow" || latest.flow !== flow.name) {
      throw new CheckpointConflict(runId, `the run belongs to ${latest.kind} ${JSON.stringify(latest.flow)}, not flow ${JSON.stringify(flow.name)}.`);
    }
    if (latest.status === "done" || latest.status === "failed") throw new CheckpointConflict(runId, `the run ended (${latest.status}).`);
    const data = readFlowData(runId, latest.data);
    if (data.digest !== flow.digest) {
      throw new FlowError(`The graph of flow ${JSON.stringify(flow.name)} changed since run ${JSON.stringify(runId)} was saved; finish it with the graph it started with.`);
    }
    return { latest, data };
  }

  /** The state stored in a checkpoint, checked against the schema but never transformed again. */
  #stored<S>(flow: Flow<S>, runId: string, data: FlowData): Promise<S> {
    return checkStoredState(flow.schema, data.state, `The stored state of run ${runId}`);
  }

  #checkTools<S>(flow: Flow<S>): void {
    for (const node of flow.graph.nodes.values()) {
      const tool = (node.body as { tool?: unknown }).tool;
      if (typeof tool === "string" && !this.executor.registry.has(tool)) {
        throw new FlowError(`Node ${JSON.stringify(node.name)} of flow ${JSON.stringify(flow.name)} calls ${JSON.stringify(tool)}, which is not registered.`);
      }
    }
  }

  async #saved<S>(flow: Flow<S>, checkpoint: CheckpointBody, scope?: CallScope): Promise<void> {
    await emit(this.#events, {
      type: "checkpoint.saved",
      runId: checkpoint.runId,
      kind: "flow",
      step: checkpoint.step,
      status: checkpoint.status,
      flow: flow.name,
      unreplayed: scope?.unreplayed ?? [],
    });
  }
}

function paused<S>(checkpoint: CheckpointBody, data: FlowData): FlowResult<S> {
  return { status: "paused", runId: checkpoint.runId, step: checkpoint.step, approvals: data.pending };
}
