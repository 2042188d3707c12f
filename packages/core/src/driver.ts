import type { JsonObject } from "./canonical.js";
import type { CallLog, CallRecord } from "./call-log.js";
import type { CheckpointBody } from "./checkpoint.js";
import { envelopeJson, readEnvelope, type RunEnvelope } from "./envelope.js";
import { CheckpointConflict, RecoveryNeedsDecision, errorText, leavesRunForRecovery } from "./errors.js";
import { emit, type CallRef, type EventSink, type LoopStage } from "./events.js";
import { CallScope, bindDecisions, type Decisions } from "./executor.js";
import { faultPoint } from "./fault-points.js";
import { identityOf, resumeIdentity, type Identity } from "./identity.js";
import { freshPlan, planReplay, type PendingCall, type ReplayPlan } from "./replay.js";
import { newRunId } from "./run-id.js";
import { DurableRun } from "./run.js";
import type { Sealer } from "./seal.js";
import { isEnded, type CheckpointStore, type RunKind } from "./checkpoint-store.js";
import type { ToolRegistry } from "./tools.js";

/** A run paused for decisions on its pending approvals: what `run`, `recover` and `resume` return then. */
export interface PausedResult {
  readonly status: "paused";
  readonly runId: string;
  readonly step: number;
  readonly approvals: readonly PendingCall[];
}

/** What one step of a program leaves. */
export type StepOutcome<D> =
  /** A call waits on a decision: the run is saved paused, at the start of the round, to run it again once resumed. */
  | { readonly paused: true }
  | {
      readonly paused: false;
      readonly data: D;
      /** Every call of the round is made: the next step works in the next round, and the round's decisions are spent. */
      readonly roundOver: boolean;
      /** The run ended: its checkpoint is saved `done`. */
      readonly done: boolean;
    };

/** What a step works with. */
export interface StepContext {
  readonly runId: string;
  /** The round the step works in: its calls are logged under it. */
  readonly round: number;
  readonly identity: Identity;
  /** The calls of the round go through it (`Executor.call(scope, …)`): its plan replays what the log holds. */
  readonly scope: CallScope;
  /** The run's call log (a tool loop stores its `model` records in it). */
  readonly log: CallLog;
}

/**
 * A kind of run on the driver (a flow, a tool loop): how it reads and writes
 * its own data, how it takes one step, and what its result is. The driver
 * does the rest: open, checks, claim, replay plan, saves and events.
 */
export interface RunProgram<D, R> {
  readonly kind: RunKind;
  /** The flow's or loop's name, stored as the checkpoint's `flow`. */
  readonly name: string;
  /** Its tools: calls in doubt of idempotent ones run again without a decision. */
  readonly registry: ToolRegistry;
  /**
   * Reads its data out of a verified checkpoint, with checks:
   * `CheckpointStoreCorrupt` for another shape, another error when the run
   * cannot go on here (a changed graph). Called before anything is written.
   */
  read(runId: string, data: JsonObject): D | Promise<D>;
  /** Its data as sealed. */
  write(data: D): JsonObject;
  /** Its data with what the call log read at a claim tells (a loop counts the model calls a dead worker made). */
  claimed?(data: D, records: readonly CallRecord[]): D;
  /** Takes one step: a superstep, a model reply, a round of tool calls. */
  step(data: D, context: StepContext): Promise<StepOutcome<D>>;
  /** The result of a run that is done. */
  result(data: D, at: { readonly runId: string; readonly step: number }): R;
  /** What `checkpoint.saved` carries for it: a flow's name, a loop's stage. */
  saved(data: D): { readonly flow?: string; readonly stage?: LoopStage };
}

/** Where the driver keeps runs, and where it reports. */
export interface DriverOptions {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly events?: EventSink | undefined;
}

/** Options of `recover`, `recoverAll` and `resume`. */
export interface RecoverOptions {
  /** Must name the run's own identity; without it the stored user and thread are restored. */
  readonly ctx?: Identity;
  /** Run calls in doubt again instead of raising `RecoveryNeedsDecision`. */
  readonly rerunInDoubt?: boolean;
}

/** A run's latest checkpoint, checked for this program and caller, with its data read. */
export interface OpenedRun<D> {
  readonly latest: CheckpointBody;
  readonly envelope: RunEnvelope<D>;
}

/**
 * Owns the life of a run of one program: starts it, opens and checks it
 * (identity first), claims it, plans the replay of its cut-short round,
 * resumes it with bound decisions, drives its steps, and saves each
 * checkpoint with its event. See docs/protocol.md, "The run driver".
 */
export class RunDriver<D, R> {
  readonly #program: RunProgram<D, R>;
  readonly #store: CheckpointStore;
  readonly #sealer: Sealer;
  readonly #events: EventSink | undefined;

  constructor(program: RunProgram<D, R>, options: DriverOptions) {
    this.#program = program;
    this.#store = options.store;
    this.#sealer = options.sealer;
    this.#events = options.events;
  }

  /** Saves step 0 of a new run with `data`, then drives it until it is done or paused. */
  async start(
    data: D,
    options: { readonly runId?: string | undefined; readonly ctx?: Identity | undefined } = {},
  ): Promise<R | PausedResult> {
    const envelope: RunEnvelope<D> = { round: 1, pending: [], decisions: [], program: data };
    const { run, checkpoint } = await DurableRun.start({
      store: this.#store,
      sealer: this.#sealer,
      runId: options.runId ?? newRunId(),
      flow: this.#program.name,
      kind: this.#program.kind,
      identity: identityOf(options.ctx),
      data: this.#json(envelope),
    });
    await this.#saved(checkpoint, data);
    return this.#drive(run, envelope, freshPlan(envelope.round));
  }

  /**
   * Reads and verifies the run's latest checkpoint and checks that this
   * caller may go on with it here: its identity first (someone else's ctx
   * learns nothing of the run), then its kind and name, then that it has not
   * ended. `CheckpointNotFound` when nothing is stored.
   */
  async open(runId: string, ctx: Identity | undefined): Promise<OpenedRun<D>> {
    const latest = await DurableRun.latest(this.#store, this.#sealer, runId);
    resumeIdentity(runId, latest.identity, ctx);
    const { kind, name } = this.#program;
    if (latest.kind !== kind || latest.flow !== name) {
      throw new CheckpointConflict(
        runId,
        `the run belongs to ${latest.kind} ${JSON.stringify(latest.flow)}, not ${kind} ${JSON.stringify(name)}.`,
      );
    }
    if (isEnded(latest.status)) throw new CheckpointConflict(runId, `the run ended (${latest.status}).`);
    const stored = readEnvelope(runId, latest.data);
    return { latest, envelope: { ...stored, program: await this.#program.read(runId, stored.program) } };
  }

  /**
   * Goes on with a run from its last checkpoint: claims it (one worker wins),
   * replays finished calls, and fails closed on calls in doubt. A paused run
   * comes back as its paused result.
   */
  async recover(runId: string, options: RecoverOptions = {}): Promise<R | PausedResult> {
    const { latest, envelope } = await this.open(runId, options.ctx);
    if (latest.status === "paused") return { status: "paused", runId, step: latest.step, approvals: envelope.pending };
    const { run, checkpoint, records } = await DurableRun.claim(this.#store, this.#sealer, latest);
    await this.#saved(checkpoint, envelope.program);
    const plan = await this.#plan(run, records, envelope.round, options);
    await emit(this.#events, {
      type: "run.recovered",
      runId,
      kind: this.#program.kind,
      step: checkpoint.step,
      replayed: refs(plan.finished.values()),
      rerun: refs(plan.inDoubt.values()),
    });
    return this.#drive(run, this.#claimed(envelope, records), plan);
  }

  /** Recovers every unfinished run of the program's name, mapping each run id to its result or to the error that stopped it. */
  async recoverAll(options: RecoverOptions = {}): Promise<Map<string, R | PausedResult | Error>> {
    const results = new Map<string, R | PausedResult | Error>();
    for await (const runId of this.#store.listUnfinished(this.#program.name)) {
      try {
        results.set(runId, await this.recover(runId, options));
      } catch (error) {
        results.set(runId, error instanceof Error ? error : new Error(errorText(error)));
      }
    }
    return results;
  }

  /**
   * Resumes a paused run with decisions on its pending approvals. The
   * decisions are stored with the claim before any is spent, so one resume
   * wins: a second one of the same pause is `CheckpointConflict`.
   */
  async resume(opened: OpenedRun<D>, decisions: Decisions, options: RecoverOptions = {}): Promise<R | PausedResult> {
    const { latest, envelope } = opened;
    if (latest.status !== "paused")
      throw new CheckpointConflict(
        latest.runId,
        `the run is ${latest.status}, not paused: there is nothing to resume.`,
      );
    const bound = bindDecisions(latest.runId, envelope.pending, decisions);
    const decided: RunEnvelope<D> = { ...envelope, pending: [], decisions: [...envelope.decisions, ...bound] };
    faultPoint("resume.before-decision-save");
    const { run, checkpoint, records } = await DurableRun.claim(this.#store, this.#sealer, latest, this.#json(decided));
    faultPoint("resume.after-decision-save");
    await this.#saved(checkpoint, decided.program);
    const plan = await this.#plan(run, records, decided.round, options);
    return this.#drive(run, this.#claimed(decided, records), plan);
  }

  /** Takes steps until the run is done or paused; saves it as failed when the program fails. */
  async #drive(run: DurableRun, envelope: RunEnvelope<D>, plan: ReplayPlan): Promise<R | PausedResult> {
    for (;;) {
      const decisions = new Map(envelope.decisions.map((d) => [d.callId, d]));
      const scope = new CallScope({
        kind: this.#program.kind,
        log: run.log,
        plan,
        identity: run.identity,
        decisions,
        events: this.#events,
      });
      const context: StepContext = {
        runId: run.runId,
        round: envelope.round,
        identity: run.identity,
        scope,
        log: run.log,
      };
      let outcome: StepOutcome<D>;
      try {
        outcome = await this.#program.step(envelope.program, context);
      } catch (error) {
        throw await this.#fail(run, envelope, error);
      }
      if (outcome.paused) return this.#pause(run, envelope, scope);
      const next: RunEnvelope<D> = outcome.roundOver
        ? { round: envelope.round + 1, pending: [], decisions: [], program: outcome.data }
        : { ...envelope, program: outcome.data };
      let checkpoint: CheckpointBody;
      try {
        checkpoint = await run.save(outcome.done ? "done" : "running", this.#json(next));
      } catch (error) {
        throw await this.#fail(run, envelope, error);
      }
      // Which finished calls of the log the round took is known once the round is over.
      await this.#saved(checkpoint, next.program, outcome.roundOver ? scope.unreplayed : []);
      if (outcome.done) {
        await emit(this.#events, {
          type: "run.done",
          runId: run.runId,
          kind: this.#program.kind,
          step: checkpoint.step,
        });
        return this.#program.result(next.program, { runId: run.runId, step: checkpoint.step });
      }
      if (outcome.roundOver) plan = freshPlan(next.round);
      envelope = next;
    }
  }

  /** Plans the rerun of the claimed round; a stop for a decision is emitted as `run.needs-decision` before it is thrown. */
  async #plan(
    run: DurableRun,
    records: readonly CallRecord[],
    round: number,
    options: RecoverOptions,
  ): Promise<ReplayPlan> {
    try {
      return planReplay(run.runId, records, round, this.#program.registry, options);
    } catch (error) {
      if (error instanceof RecoveryNeedsDecision) {
        await emit(this.#events, {
          type: "run.needs-decision",
          runId: run.runId,
          kind: this.#program.kind,
          step: run.step,
          calls: error.calls,
        });
      }
      throw error;
    }
  }

  /** Saves a paused checkpoint that keeps the round's starting point and lists the calls waiting on decisions. */
  async #pause(run: DurableRun, envelope: RunEnvelope<D>, scope: CallScope): Promise<PausedResult> {
    const pending = scope.pending.map(({ callId, tool, args }) => ({ callId, tool, args }));
    // Decisions already given stay with the run until its round is over: each is bound to its call.
    const held: RunEnvelope<D> = { ...envelope, pending };
    const checkpoint = await run.save("paused", this.#json(held));
    await this.#saved(checkpoint, held.program);
    await emit(this.#events, {
      type: "run.paused",
      runId: run.runId,
      kind: this.#program.kind,
      step: checkpoint.step,
      approvals: pending,
    });
    return { status: "paused", runId: run.runId, step: checkpoint.step, approvals: pending };
  }

  /**
   * Saves the run as failed for an error of the program (a node, a tool, the
   * model) and returns the error to throw. Errors of the durable machinery (a
   * lost claim, a store that did not answer, a call in doubt) leave the run as
   * it stands for recovery.
   */
  async #fail(run: DurableRun, envelope: RunEnvelope<D>, error: unknown): Promise<unknown> {
    if (leavesRunForRecovery(error)) return error;
    const text = errorText(error);
    try {
      const checkpoint = await run.save("failed", this.#json({ ...envelope, pending: [], decisions: [], error: text }));
      await this.#saved(checkpoint, envelope.program);
      await emit(this.#events, {
        type: "run.failed",
        runId: run.runId,
        kind: this.#program.kind,
        step: checkpoint.step,
        error: text,
      });
    } catch (saveError) {
      return saveError;
    }
    return error;
  }

  #claimed(envelope: RunEnvelope<D>, records: readonly CallRecord[]): RunEnvelope<D> {
    return this.#program.claimed === undefined
      ? envelope
      : { ...envelope, program: this.#program.claimed(envelope.program, records) };
  }

  #json(envelope: RunEnvelope<D>): JsonObject {
    return envelopeJson({ ...envelope, program: this.#program.write(envelope.program) });
  }

  async #saved(checkpoint: CheckpointBody, data: D, unreplayed: readonly CallRef[] = []): Promise<void> {
    const { runId, step, status } = checkpoint;
    await emit(this.#events, {
      type: "checkpoint.saved",
      runId,
      kind: this.#program.kind,
      step,
      status,
      ...this.#program.saved(data),
      unreplayed,
    });
  }
}

function refs(calls: Iterable<CallRef>): CallRef[] {
  return [...calls].map(({ callId, tool }) => ({ callId, tool }));
}
