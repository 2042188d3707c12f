import type { JsonObject, JsonValue } from "../base/json.js";
import type { CallRecord } from "../log/call-log.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import { envelopeJson, readEnvelope, type RunEnvelope } from "../run/envelope.js";
import { RecoveryNeedsDecision, errorText, leavesRunForRecovery } from "../base/errors.js";
import { emit, type CallRef, type EventSink } from "../log/events.js";
import type { ValueCodec } from "../base/codec.js";
import { CallScope, type RoundWait } from "../calls/call-scope.js";
import { takenAfterRound } from "../calls/event-wait.js";
import { MAX_SLEEP_MS } from "../calls/tools.js";
import { freshPlan, planReplay, type ReplayPlan } from "../calls/replay.js";
import type { DurableRun } from "../run/durable-run.js";
import { endedChild, tellParent } from "../run/parent.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import type { ChildEnd } from "../calls/child-runs.js";
import { inSpan, runAttributes } from "../telemetry/tracing.js";
import { instruments, runMetricAttributes } from "../telemetry/metrics.js";
import type {
  AsleepResult,
  DriveResult,
  PausedResult,
  RecoverOptions,
  RunProgram,
  StepContext,
  StepOutcome,
} from "./program.js";

/**
 * Drives a run its driver started or claimed: takes the program's steps,
 * plans the replay of a claimed round, and saves each checkpoint (paused,
 * failed, done) with its event. The driver (`RunDriver`) opens, checks and
 * claims; this goes on from there.
 */
export class RunSteps<D, R> {
  readonly #program: RunProgram<D, R>;
  readonly #events: EventSink | undefined;
  readonly #codec: ValueCodec;

  constructor(program: RunProgram<D, R>, events: EventSink | undefined, codec: ValueCodec) {
    this.#program = program;
    this.#events = events;
    this.#codec = codec;
  }

  /**
   * Takes steps until the run is done or paused; saves it as failed when the
   * program fails. Stops with the reason of the run's signal once it aborts
   * (given up, or lost), saving nothing more.
   */
  async steps(run: DurableRun, envelope: RunEnvelope<D>, plan: ReplayPlan): Promise<DriveResult<R>> {
    const { signal } = run;
    for (;;) {
      signal.throwIfAborted();
      // A step queued to land later that did not (its commit failed) stops the run here, not rounds later.
      run.throwIfWriteFailed();
      const answers = new Map(envelope.answers.map((answer) => [answer.callId, answer]));
      const scope = new CallScope({
        kind: this.#program.kind,
        log: run.log,
        plan,
        identity: run.identity,
        answers,
        events: this.#events,
        signal,
        codec: this.#codec,
        inbox: run.store.inbox === undefined ? undefined : () => run.inbox(),
        taken: envelope.taken,
        wokenBefore: envelope.wokenBefore,
        stream: run.stream,
      });
      const context: StepContext = {
        runId: run.runId,
        round: envelope.round,
        identity: run.identity,
        scope,
        log: run.log,
        stream: run.stream,
      };
      let outcome: StepOutcome<D>;
      try {
        outcome = await this.#step(run, envelope, context);
      } catch (error) {
        // Given up or lost mid-step: the run is left as it stands for the worker that takes it, not failed.
        signal.throwIfAborted();
        // A call left in doubt wins over another call's error: the run waits for a decision, it has not failed.
        throw await this.#fail(run, envelope, scope.inDoubt ?? error);
      }
      // A worker that gave the run up saves nothing more: the round's finished calls are in the log for the next one.
      signal.throwIfAborted();
      // A paused round keeps its start: the resume that reruns it plans a call in doubt as a recovery does.
      if (outcome.next === "pause") return this.#pause(run, envelope, scope);
      // A call left in doubt that the program caught (a node's try/catch around a timeout) leaves the round
      // unsettled, as it would uncaught: the run is left for recovery, where it waits for a decision.
      if (scope.inDoubt !== undefined) throw scope.inDoubt;
      // A sleep keeps the round's start too: the round runs again when the run wakes, its finished calls replayed.
      if (outcome.next === "sleep") return this.#sleep(run, envelope, outcome.until, scope.waiting);
      const taken = outcome.roundOver ? takenAfterRound(envelope.taken, plan) : undefined;
      const next: RunEnvelope<D> = outcome.roundOver
        ? {
            round: envelope.round + 1,
            roundStart: run.log.position,
            pending: [],
            answers: [],
            ...(taken === undefined ? {} : { taken }),
            ...(envelope.parent === undefined ? {} : { parent: envelope.parent }),
            ...(envelope.forkedFrom === undefined ? {} : { forkedFrom: envelope.forkedFrom }),
            // The run's version goes on with it: code of another version still refuses it after its first round.
            ...(envelope.version === undefined ? {} : { version: envelope.version }),
            ...(envelope.trace === undefined ? {} : { trace: envelope.trace }),
            program: outcome.data,
          }
        : { ...envelope, program: outcome.data };
      // Which finished calls of the log the round took is known once the round is over.
      const unreplayed = outcome.roundOver ? scope.unreplayed : [];
      if (outcome.next === "wait") return this.#wait(run, next, unreplayed);
      let checkpoint: CheckpointBody;
      try {
        if (outcome.next === "done") {
          await this.#tellParent(run, next, { status: "done", output: this.#output(next.program) });
          checkpoint = await run.save("done", this.json(next));
        } else {
          // A running step lands with the run's next commit: the next call's `started`, or a save that must land.
          const data = next.program;
          checkpoint = run.saveLater(this.json(next), () => void this.saved(checkpoint, data, unreplayed)).body;
        }
      } catch (error) {
        throw await this.#fail(run, envelope, error);
      }
      if (outcome.next === "done") {
        this.#ended("done");
        await this.saved(checkpoint, next.program, unreplayed);
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

  /** One step of the program, in its span (a child of the attempt's), timed. */
  #step(run: DurableRun, envelope: RunEnvelope<D>, context: StepContext): Promise<StepOutcome<D>> {
    const { kind, name, version } = this.#program;
    const attributes = runAttributes({ runId: run.runId, kind, name, version });
    const started = performance.now();
    return inSpan(`durable.step ${name}`, { ...attributes, "durable.run.round": envelope.round }, () =>
      this.#program.step(envelope.program, context),
    ).finally(() => {
      const seconds = (performance.now() - started) / 1000;
      instruments().stepDuration.record(seconds, runMetricAttributes(this.#program));
    });
  }

  /** Counts a run that ended. */
  #ended(status: "done" | "failed"): void {
    instruments().runsEnded.add(1, runMetricAttributes(this.#program, { "durable.run.status": status }));
  }

  /**
   * Plans the rerun of the claimed round. A stop for a decision saves the
   * claimed checkpoint's `data` again as the next step, waiting for a
   * decision (claimable listings leave the run out until a decision claims
   * it), and is emitted as `run.needs-decision` with that step before it is thrown.
   */
  async plan(
    run: DurableRun,
    records: readonly CallRecord[],
    round: number,
    options: RecoverOptions,
    data: JsonValue,
  ): Promise<ReplayPlan> {
    try {
      const { forkedFrom } = readEnvelope(run.runId, data);
      const plan = planReplay(run.runId, records, round, this.#program.registry, { ...options, forkedFrom });
      countInDoubt(plan.inDoubt.values());
      return plan;
    } catch (error) {
      if (error instanceof RecoveryNeedsDecision) {
        countInDoubt(error.calls);
        // A mark that did not land leaves the run claimable, as before: the next recovery stops and marks it again.
        const step = await run.waitForDecision(data).then(
          (saved) => saved.step,
          () => run.step,
        );
        await emit(this.#events, {
          type: "run.needs-decision",
          runId: run.runId,
          kind: this.#program.kind,
          step,
          calls: error.calls,
        });
      }
      throw error;
    }
  }

  /** Saves a paused checkpoint that keeps the round's starting point and lists the calls waiting on answers. */
  async #pause(run: DurableRun, envelope: RunEnvelope<D>, scope: CallScope): Promise<PausedResult> {
    const pending = scope.pending.map(({ callId, tool, args }) => ({ callId, tool, args }));
    // Answers already given stay with the run until its round is over: each is bound to its call.
    const step = await this.#savePaused(run, { ...envelope, pending }, []);
    return { status: "paused", runId: run.runId, step, approvals: pending };
  }

  /**
   * Saves the run asleep until `until` (its lease held for the sleep), with
   * its events; a round that waits for events is saved waiting for them too
   * (an event sent wakes it before then).
   */
  async #sleep(
    run: DurableRun,
    envelope: RunEnvelope<D>,
    until: number,
    waiting: RoundWait | undefined,
  ): Promise<AsleepResult> {
    const ms = Math.min(MAX_SLEEP_MS, Math.max(1, until - Date.now()));
    const waitsFor = waiting === undefined ? undefined : [...waiting.names];
    const asleep = { ...envelope, asleep: until, ...(waitsFor === undefined ? {} : { waitsFor }) };
    const checkpoint = await run.sleep(this.json(asleep), ms, waiting?.seen);
    await this.saved(checkpoint, envelope.program);
    const { runId } = run;
    const { step } = checkpoint;
    const waits = waitsFor === undefined ? {} : { waitsFor };
    await emit(this.#events, { type: "run.asleep", runId, kind: this.#program.kind, step, until, ...waits });
    return { status: "asleep", runId, step, until, ...waits };
  }

  /** Saves a run that waits for outside input as paused with no pending call, and returns the program's result. */
  async #wait(run: DurableRun, next: RunEnvelope<D>, unreplayed: readonly CallRef[]): Promise<R> {
    const step = await this.#savePaused(run, next, unreplayed);
    return this.#program.result(next.program, { runId: run.runId, step });
  }

  /** Saves `envelope` paused, with its events (`run.paused` lists its pending calls); returns the step. */
  async #savePaused(run: DurableRun, envelope: RunEnvelope<D>, unreplayed: readonly CallRef[]): Promise<number> {
    const checkpoint = await run.save("paused", this.json(envelope));
    await this.saved(checkpoint, envelope.program, unreplayed);
    const { runId } = run;
    await emit(this.#events, {
      type: "run.paused",
      runId,
      kind: this.#program.kind,
      step: checkpoint.step,
      approvals: envelope.pending,
    });
    return checkpoint.step;
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
      await this.#tellParent(run, envelope, { status: "failed", error: text });
      const checkpoint = await run.save("failed", this.json({ ...envelope, pending: [], answers: [], error: text }));
      this.#ended("failed");
      await this.saved(checkpoint, envelope.program);
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

  /** What a done child gives its parent: the program's output (a flow's state), or its whole data as written. */
  #output(data: D): JsonValue {
    return this.#program.output?.(data) ?? this.#program.write(data);
  }

  /**
   * Tells the parent of ended child run `runId` again how it ended (see
   * `RunDriver.retellEnd`): true when it ended with a parent to tell.
   */
  async retellEnd(store: CheckpointStore, sealer: Sealer, runId: string): Promise<boolean> {
    const { kind, name } = this.#program;
    const ended = await endedChild(store, sealer, runId, { kind, name });
    if (ended === undefined) return false;
    const { latest, envelope, parent } = ended;
    const end: ChildEnd =
      latest.status === "failed"
        ? { status: "failed", error: envelope.error ?? "" }
        : { status: "done", output: this.#output(await this.#program.read(runId, envelope.program)) };
    await tellParent(store, sealer, parent, runId, end);
    return true;
  }

  /** Tells a child run's parent how it ended, once its calls' records landed, before it is saved so. */
  async #tellParent(run: DurableRun, envelope: RunEnvelope<D>, end: ChildEnd): Promise<void> {
    if (envelope.parent === undefined) return;
    await run.flush();
    await tellParent(run.store, run.sealer, envelope.parent, run.runId, end);
  }

  claimed(run: DurableRun, envelope: RunEnvelope<D>, records: readonly CallRecord[]): RunEnvelope<D> {
    return this.#program.claimed === undefined
      ? envelope
      : { ...envelope, program: this.#program.claimed(envelope.program, records, run.runId) };
  }

  json(envelope: RunEnvelope<D>): JsonObject {
    return envelopeJson({ ...envelope, program: this.#program.write(envelope.program) });
  }

  async saved(checkpoint: CheckpointBody, data: D, unreplayed: readonly CallRef[] = []): Promise<void> {
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

/** Counts the calls a recovery found in doubt: those it reruns, or those it stops for. */
function countInDoubt(calls: Iterable<{ readonly tool: string }>): void {
  for (const { tool } of calls) instruments().callsInDoubt.add(1, { "durable.call.tool": tool });
}
