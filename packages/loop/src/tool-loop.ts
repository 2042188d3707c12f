import {
  CheckpointConflict,
  CheckpointNotFound,
  Executor,
  InvalidInput,
  newRunId,
  type ApprovalPort,
  type Decisions,
  type CheckpointKeys,
  type CheckpointStore,
  type EventSink,
  type Identity,
  type RunStatus,
  type ToolRegistry,
} from "@durable/core";
import {
  CallScope,
  DurableRun,
  bindDecisions,
  canonicalCopy,
  emit,
  faultPoint,
  freshPlan,
  identityOf,
  leavesRunForRecovery,
  planReplay,
  resumeIdentity,
  sealerFor,
  type CallRecord,
  type CheckpointBody,
  type ReplayPlan,
  type Sealer,
} from "@durable/core/runner";
import { checkLoopArgs, checkMessages } from "./check-args.js";
import { readLoopData, toJson, type LoopApproval, type LoopData } from "./loop-data.js";
import type { LoopModel, Message, ToolCallRequest, ToolSpec } from "./model.js";

/** Where a tool loop stands when it returns. */
export type LoopResult =
  | {
      readonly status: "done";
      readonly runId: string;
      readonly step: number;
      readonly messages: readonly Message[];
      /** The model's last text. */
      readonly text: string;
      /** `final`: the model answered with no tool call; `max-steps`: it was called `maxSteps` times. */
      readonly stopped: "final" | "max-steps";
    }
  | { readonly status: "paused"; readonly runId: string; readonly step: number; readonly approvals: readonly LoopApproval[] };

/** What both entry points share. */
export interface LoopStoreOptions {
  readonly checkpoints: CheckpointStore;
  /** At least 32 bytes, the same on every worker; required unless the store is in-process only. */
  readonly checkpointKey?: CheckpointKeys;
  /** The end user, thread and principal; sealed in, and checked on recovery and resume. */
  readonly ctx?: Identity;
  readonly events?: EventSink;
  /** A synchronous approval port for `approval: true` tools, instead of pausing. */
  readonly approvals?: ApprovalPort;
  /** Run calls in doubt again instead of raising `RecoveryNeedsDecision`. */
  readonly rerunInDoubt?: boolean;
}

/** Options of `runToolLoop`. */
export interface ToolLoopOptions extends LoopStoreOptions {
  /** Default `newRunId()`. With the id of a paused loop, resumes it with `decisions`. */
  readonly runId?: string;
  /** Model calls allowed over the whole run, across recoveries; default 20. */
  readonly maxSteps?: number;
  /** The loop's name in the store (its "flow"); default `"tool-loop"`. */
  readonly name?: string;
  /** Decisions for the pending approvals of a paused loop, by call id. */
  readonly decisions?: Decisions;
}

const DEFAULT_NAME = "tool-loop";

/**
 * Runs an LLM tool loop durably. The history is saved after each model reply
 * (its tool calls are pinned: recovery never asks the model again for a saved
 * reply) and after the tool results. A reply's tool calls run concurrently,
 * each through the call log.
 */
export async function runToolLoop(model: LoopModel, registry: ToolRegistry, messages: readonly Message[], options: ToolLoopOptions): Promise<LoopResult> {
  checkLoopArgs("runToolLoop", model, registry, options);
  checkMessages("runToolLoop", messages);
  const loop = new Loop(model, registry, options);
  const runId = options.runId ?? newRunId();
  const latest = options.runId === undefined ? undefined : await DurableRun.latest(options.checkpoints, loop.sealer, runId).catch(ifNotFound);
  if (latest !== undefined) return loop.resume(latest, options.name ?? DEFAULT_NAME, options.decisions ?? {});
  const maxSteps = options.maxSteps ?? 20;
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1) throw new InvalidInput(`maxSteps must be a whole number ≥ 1, not ${maxSteps}.`);
  const data: LoopData = { messages, stage: "start", modelCalls: 0, maxSteps, round: 0, pending: [], decisions: [] };
  const { run, checkpoint } = await DurableRun.start({
    store: options.checkpoints,
    sealer: loop.sealer,
    runId,
    flow: options.name ?? DEFAULT_NAME,
    kind: "loop",
    identity: identityOf(options.ctx),
    data: toJson(data),
  });
  await loop.saved(checkpoint, data, []);
  return loop.drive(run, data, freshPlan(0), false);
}

/** Goes on with a tool loop from its last checkpoint on any worker; a paused loop comes back paused. */
export async function recoverToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  options: LoopStoreOptions & { readonly name?: string },
): Promise<LoopResult> {
  checkLoopArgs("recoverToolLoop", model, registry, options);
  const loop = new Loop(model, registry, options);
  const latest = await DurableRun.latest(options.checkpoints, loop.sealer, runId);
  const data = loop.check(latest, options.name ?? DEFAULT_NAME);
  if (latest.status === "paused") return paused(latest, data);
  const { run, checkpoint, records } = await DurableRun.claim(options.checkpoints, loop.sealer, latest);
  await loop.saved(checkpoint, data, []);
  const plan = data.stage === "model-reply" ? planReplay(runId, records, data.round, registry, options) : freshPlan(data.round);
  return loop.drive(run, withModelCalls(data, records), plan, true);
}

/**
 * The loop's data with every model call the log records counted: a worker
 * that died while the model answered made a call its checkpoint never saw.
 */
function withModelCalls(data: LoopData, records: readonly CallRecord[]): LoopData {
  const made = records.filter((record) => record.kind === "model").length;
  return made > data.modelCalls ? { ...data, modelCalls: made } : data;
}

function ifNotFound(error: unknown): undefined {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
}

function paused(checkpoint: CheckpointBody, data: LoopData): LoopResult {
  return { status: "paused", runId: checkpoint.runId, step: checkpoint.step, approvals: data.pending };
}

/** One worker's work on one loop. */
class Loop {
  readonly sealer: Sealer;
  readonly #executor: Executor;
  readonly #specs: ToolSpec[];

  constructor(
    readonly model: LoopModel,
    readonly registry: ToolRegistry,
    readonly options: LoopStoreOptions,
  ) {
    this.sealer = sealerFor(options.checkpoints, options.checkpointKey);
    this.#executor = new Executor(registry, options.approvals === undefined ? {} : { approvals: options.approvals });
    this.#specs = registry.list().map(({ name, description, parameters }) => ({
      name,
      ...(description === undefined ? {} : { description }),
      ...(parameters === undefined ? {} : { parameters }),
    }));
  }

  /** Checks a stored loop may go on here, and reads its data. */
  check(latest: CheckpointBody, name: string): LoopData {
    resumeIdentity(latest.runId, latest.identity, this.options.ctx); // first: a caller with someone else's ctx learns nothing of the run
    if (latest.kind !== "loop" || latest.flow !== name) {
      throw new CheckpointConflict(latest.runId, `the run belongs to ${latest.kind} ${JSON.stringify(latest.flow)}, not tool loop ${JSON.stringify(name)}.`);
    }
    if (latest.status === "done" || latest.status === "failed") throw new CheckpointConflict(latest.runId, `the run ended (${latest.status}).`);
    return readLoopData(latest.runId, latest.data);
  }

  /** Resumes a paused loop: the decisions are stored with the next checkpoint before any is spent. */
  async resume(latest: CheckpointBody, name: string, decisions: Decisions): Promise<LoopResult> {
    const data = this.check(latest, name);
    if (latest.status !== "paused") throw new CheckpointConflict(latest.runId, `the run is ${latest.status}, not paused; recover it with recoverToolLoop.`);
    const bound = bindDecisions(latest.runId, data.pending, decisions);
    // The stage stays "model-reply": the pinned tool calls run next, now with the decisions.
    const next: LoopData = { ...data, pending: [], decisions: [...data.decisions, ...bound] };
    faultPoint("resume.before-decision-save");
    const { run, checkpoint, records } = await DurableRun.claim(this.options.checkpoints, this.sealer, latest, toJson(next));
    faultPoint("resume.after-decision-save");
    await this.saved(checkpoint, next, []);
    const plan = planReplay(latest.runId, records, data.round, this.registry, this.options);
    return this.drive(run, withModelCalls(next, records), plan, false);
  }

  /** Alternates model replies and tool rounds until the model stops, `maxSteps` runs out, or an approval pauses it. */
  async drive(run: DurableRun, data: LoopData, plan: ReplayPlan, recovered: boolean): Promise<LoopResult> {
    for (;;) {
      if (data.stage === "model-reply") {
        const scope = new CallScope({
          kind: "loop",
          log: run.log,
          plan,
          identity: run.identity,
          decisions: new Map(data.decisions.map((d) => [d.callId, d])),
          events: this.options.events,
        });
        let results: Message[] | undefined;
        try {
          results = await this.#toolRound(scope, data);
        } catch (error) {
          throw await this.#fail(run, data, error);
        } finally {
          if (recovered) {
            recovered = false;
            await emit(this.options.events, { type: "run.recovered", runId: run.runId, kind: "loop", step: run.step, replayed: scope.replayed, rerun: scope.rerun });
          }
        }
        if (results === undefined) {
          const pending = scope.pending.map(({ callId, tool, args }) => ({ callId, tool, args }));
          // Decisions already given stay with the run until this round is done: each is bound to its call.
          const held: LoopData = { ...data, pending };
          const checkpoint = await run.save("paused", toJson(held));
          await this.saved(checkpoint, held, []); // the round is not complete: which finished calls it claims is not known yet
          await emit(this.options.events, { type: "run.paused", runId: run.runId, kind: "loop", step: checkpoint.step, approvals: pending });
          return paused(checkpoint, held);
        }
        data = { ...data, messages: [...data.messages, ...results], stage: "tool-results", pending: [], decisions: [] };
        await this.#save(run, "running", data, scope.unreplayed);
        continue;
      }
      if (data.modelCalls >= data.maxSteps) return this.#finish(run, { ...data, stopped: "max-steps" });
      let message: Message & { readonly role: "assistant" };
      try {
        // Stored before the model is asked, so maxSteps bounds the calls made, crashes included.
        await run.log.append({ round: data.round + 1, callId: `model:${data.modelCalls + 1}`, tool: "model", kind: "model", args: null });
        faultPoint("model.before-call");
        const reply = await this.model.reply(data.messages, this.#specs);
        const said = { role: "assistant", content: reply.text, ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}) };
        message = canonicalCopy(said, "the model's reply") as unknown as typeof message;
      } catch (error) {
        throw await this.#fail(run, data, error);
      }
      data = { ...data, messages: [...data.messages, message], modelCalls: data.modelCalls + 1, round: data.round + 1, stage: "model-reply" };
      if (message.toolCalls === undefined) return this.#finish(run, { ...data, stopped: "final" });
      await this.#save(run, "running", data, []);
      plan = freshPlan(data.round);
    }
  }

  /** Runs the pinned tool calls of the last reply concurrently; undefined when one waits on an approval. */
  async #toolRound(scope: CallScope, data: LoopData): Promise<Message[] | undefined> {
    const last = data.messages.at(-1);
    const calls: readonly ToolCallRequest[] = last?.role === "assistant" ? (last.toolCalls ?? []) : [];
    const round = Promise.all(
      calls.map(async (call): Promise<Message | undefined> => {
        const reply = (content: string): Message => ({ role: "tool", toolCallId: call.id, name: call.name, content });
        if (!this.registry.has(call.name)) return reply(`error: there is no tool named ${JSON.stringify(call.name)}`);
        const outcome = await this.#executor.call(scope, call.id, call.name, call.args);
        if (outcome.status === "pending") return undefined;
        if (outcome.status === "denied") return reply(`denied${outcome.reason === undefined ? "" : `: ${outcome.reason}`}`);
        return reply(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value));
      }),
    );
    const results = await round.finally(() => scope.settled()); // a call left running when another threw lands first
    return results.includes(undefined) ? undefined : (results as Message[]);
  }

  async #finish(run: DurableRun, data: LoopData): Promise<LoopResult> {
    const checkpoint = await this.#save(run, "done", data, []);
    await emit(this.options.events, { type: "run.done", runId: run.runId, kind: "loop", step: checkpoint.step });
    const last = [...data.messages].reverse().find((m) => m.role === "assistant");
    return { status: "done", runId: run.runId, step: checkpoint.step, messages: data.messages, text: last?.content ?? "", stopped: data.stopped ?? "final" };
  }

  async #save(run: DurableRun, status: RunStatus, data: LoopData, unreplayed: CallScope["unreplayed"]): Promise<CheckpointBody> {
    let checkpoint: CheckpointBody;
    try {
      checkpoint = await run.save(status, toJson(data));
    } catch (error) {
      throw await this.#fail(run, data, error);
    }
    await this.saved(checkpoint, data, unreplayed);
    return checkpoint;
  }

  /** Saves the loop as failed for a tool's or the model's error; leaves it for recovery after a durable-machinery error. */
  async #fail(run: DurableRun, data: LoopData, error: unknown): Promise<unknown> {
    if (leavesRunForRecovery(error)) return error;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    try {
      const checkpoint = await run.save("failed", toJson({ ...data, pending: [], decisions: [], error: message }));
      await this.saved(checkpoint, data, []);
      await emit(this.options.events, { type: "run.failed", runId: run.runId, kind: "loop", step: checkpoint.step, error: message });
    } catch (saveError) {
      return saveError;
    }
    return error;
  }

  async saved(checkpoint: CheckpointBody, data: LoopData, unreplayed: CallScope["unreplayed"]): Promise<void> {
    await emit(this.options.events, {
      type: "checkpoint.saved",
      runId: checkpoint.runId,
      kind: "loop",
      step: checkpoint.step,
      status: checkpoint.status,
      stage: data.stage,
      unreplayed,
    });
  }
}

