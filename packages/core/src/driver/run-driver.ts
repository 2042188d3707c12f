import { checkBeforeClaim, decideAtClaim, decidedBy, readInDoubtDecisions } from "../run/in-doubt-decisions.js";
import { answered, goesOn, retried } from "../run/run-changes.js";
import { PLAIN_JSON, type ValueCodec } from "../base/codec.js";
import { readCallLog } from "../log/call-log.js";
import { firstEnvelope, readEnvelope, type RunEnvelope } from "../run/envelope.js";
import type { ParentRef } from "../calls/child-runs.js";
import { CheckpointConflict, RecoveryNeedsDecision } from "../base/errors.js";
import { emit, type CallRef, type EventSink } from "../log/events.js";
import { withholdingContent } from "../log/withheld.js";
import type { ApprovalAnswers } from "../calls/approvals.js";
import { faultPoint } from "../base/fault-points.js";
import { identityOf, resumeIdentity, type Identity } from "../base/identity.js";
import { freshPlan, planReplay } from "../calls/replay.js";
import { newRunId } from "../base/names.js";
import { DurableRun, type RunStart } from "../run/durable-run.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import { startedAs } from "../run/parent.js";
import { WAITING } from "../store/rules.js";
import { recoverAll, recoverEach } from "./recover-each.js";
import type {
  DriverOptions,
  OpenedRun,
  DriveResult,
  RecoverEachOptions,
  RecoverOptions,
  Recovered,
  RunProgram,
  SubmitOptions,
} from "./program.js";
import { leaseTerms } from "../run/lease.js";
import type { StreamTerms } from "../log/run-stream.js";
import { streamStore } from "../log/stream-read.js";
import { checkQueuesCapability } from "./queue.js";
import { RunSteps } from "./steps.js";
import { reopenFailed } from "../run/reopen.js";
import { cancelOrphan, saveCancelled } from "../run/cancel.js";
import { checkServedVersion, type RunVersion } from "../run/versions.js";
import { holding } from "./holding.js";
import { RunTelemetry } from "./run-telemetry.js";

/**
 * Owns the life of a run of one program: starts it, opens and checks it
 * (identity first), claims it, plans the replay of its cut-short round,
 * resumes it with bound answers, drives its steps, and saves each
 * checkpoint with its event. See docs/protocol.md, "The run driver".
 */
export class RunDriver<D, R> {
  readonly #program: RunProgram<D, R>;
  readonly #store: CheckpointStore;
  readonly #sealer: Sealer;
  readonly #events: EventSink | undefined;
  readonly #lease: LeaseTerms;
  readonly #codec: ValueCodec;
  readonly #drive: RunSteps<D, R>;
  readonly #telemetry: RunTelemetry;
  /** What each drive of a run holds it with: this worker's lease, how often it snapshots, and its stream, if any. */
  readonly #drives: { lease: LeaseTerms; snapshotEvery: number | undefined; stream: StreamTerms | undefined };

  constructor(program: RunProgram<D, R>, options: DriverOptions) {
    this.#program = program;
    this.#store = options.store;
    this.#sealer = options.sealer;
    // An encrypted run's events leave out what the store encrypts, unless the runner asked for it.
    const withhold = options.sealer.encrypts && options.plainEvents !== true && options.events !== undefined;
    this.#events = withhold ? withholdingContent(options.events as EventSink) : options.events;
    this.#lease = options.lease ?? leaseTerms("RunDriver", undefined);
    this.#codec = options.codec ?? PLAIN_JSON;
    if (options.stream !== undefined) streamStore(program.name, options.store);
    this.#drives = { lease: this.#lease, snapshotEvery: options.snapshotEvery, stream: options.stream };
    this.#drive = new RunSteps(program, this.#events, this.#codec);
    this.#telemetry = new RunTelemetry(program);
  }

  /** What the driver drives: a flow's or a loop's runs of one name and version, kept in one store. */
  get kind(): RunKind {
    return this.#program.kind;
  }

  get name(): string {
    return this.#program.name;
  }

  get version(): RunVersion | undefined {
    return this.#program.version;
  }

  get store(): CheckpointStore {
    return this.#store;
  }

  /**
   * Saves step 0 of a new run with `data`, then drives it until it is done or
   * paused; a `signal` gives it up as it gives up a recovery. A run id that is
   * taken is `CheckpointConflict` at the first commit, before any tool runs.
   */
  async start(
    data: D,
    options: {
      readonly runId?: string | undefined;
      readonly ctx?: Identity | undefined;
      readonly signal?: AbortSignal | undefined;
    } = {},
  ): Promise<DriveResult<R>> {
    const runId = options.runId ?? newRunId();
    // Its first attempt is sealed with step 0: a worker that takes the run over links its attempt to this one.
    const attempt = this.#telemetry.attempt(runId, "start");
    const envelope = firstEnvelope(data, { version: this.#program.version, trace: attempt.sealed });
    // Refused before its step 0 is queued (a malformed run id, data that cannot be sealed), it ends the attempt.
    const { run } = await this.#telemetry.begun(attempt, () =>
      DurableRun.startLater({ ...this.#newRun(runId, options.ctx, envelope), stream: this.#drives.stream }, (saved) => {
        this.#telemetry.counted("runsStarted");
        void this.#drive.saved(saved, data);
      }),
    );
    return holding(run, attempt, options.signal, () => this.#drive.steps(run, envelope, freshPlan(envelope.round)));
  }

  /** What step 0 of a new run of this driver's is saved from. */
  #newRun(runId: string, ctx: Identity | undefined, envelope: RunEnvelope<D>): RunStart {
    return {
      queue: envelope.queue,
      store: this.#store,
      sealer: this.#sealer,
      runId,
      name: this.#program.name,
      kind: this.#program.kind,
      identity: identityOf(ctx),
      data: this.#drive.json(envelope),
      lease: this.#lease,
      snapshotEvery: this.#drives.snapshotEvery,
    };
  }

  /**
   * Saves step 0 of a new run with `data` and leaves it to the fleet: its lease released at once, so a worker serving
   * it claims it at its next poll. With `parent`, it is a child run, whose end is sent to its parent (`startChild`). A
   * run id already taken by this child of this parent (its start's record did not land) is no error; by any other
   * run, `CheckpointConflict`.
   */
  async enqueue(
    data: D,
    options: { readonly runId: string; readonly ctx?: Identity | undefined; readonly parent?: ParentRef | undefined },
  ): Promise<void> {
    const { parent, runId } = options;
    const trace = this.#telemetry.startTrace(runId);
    const envelope = firstEnvelope(data, { parent, version: this.#program.version, trace });
    try {
      await this.#queued(envelope, runId, options.ctx);
    } catch (error) {
      if (!(error instanceof CheckpointConflict)) throw error;
      const run = { runId, name: this.#program.name, kind: this.#program.kind };
      if (!(await startedAs(this.#store, this.#sealer, run, parent, this.#drive.json(envelope)))) throw error;
    }
  }

  /**
   * `enqueue` for a start from outside (`FlowRunner.start`): a run id already taken by a run of this driver's that
   * `ctx` may see is no error (a retried start starts nothing new), unless `ifExists` is `"error"`; taken by any other
   * run, `CheckpointConflict`. True when this call started the run.
   */
  async submit(data: D, options: SubmitOptions): Promise<boolean> {
    checkQueuesCapability(this.#program.name, this.#store, options.queue);
    try {
      const trace = this.#telemetry.startTrace(options.runId);
      const envelope = firstEnvelope(data, { queue: options.queue, version: this.#program.version, trace });
      await this.#queued(envelope, options.runId, options.ctx);
      return true;
    } catch (error) {
      if (!(error instanceof CheckpointConflict) || options.ifExists === "error") throw error;
      await this.#latestOwn(options.runId, options.ctx);
      return false;
    }
  }

  /** Saves step 0 of a new run with no lease: a worker serving it claims it at once. */
  async #queued(envelope: RunEnvelope<D>, runId: string, ctx: Identity | undefined): Promise<void> {
    const { checkpoint } = await DurableRun.start({ ...this.#newRun(runId, ctx, envelope), leased: false });
    this.#telemetry.counted("runsStarted");
    await this.#drive.saved(checkpoint, envelope.program);
  }

  /**
   * Tells the parent of child run `runId` (this driver's) again how it ended, when it ended: true then (the telling
   * is a duplicate when the first one landed). A parent that waits for a child's end and finds none asks it, so an end
   * its parent refused (it had failed, and was retried since; it was not stored yet) is not lost. Reads one row while
   * the child runs.
   */
  retellEnd(runId: string): Promise<boolean> {
    return this.#drive.retellEnd(this.#store, this.#sealer, runId);
  }

  /**
   * Reads and verifies the run's latest checkpoint and checks that this
   * caller may go on with it here: its identity first (someone else's ctx
   * learns nothing of the run), then its kind and name, then that it has not
   * ended (for a retry: that it failed, and then its envelope comes without
   * the error), then that it is a run of this program's version
   * (`VersionNotServed`). `CheckpointNotFound` when nothing is stored.
   */
  async open(runId: string, ctx: Identity | undefined, retrying = false): Promise<OpenedRun<D>> {
    const latest = await this.#latestOwn(runId, ctx);
    const stored = readEnvelope(runId, latest.data);
    checkServedVersion(runId, this.#program.name, stored.version, this.#program.version);
    if (!retrying) goesOn(latest, stored);
    const going = retrying ? retried(latest, stored) : stored;
    return { latest, envelope: { ...going, program: await this.#program.read(runId, going.program) } };
  }

  /** The run's latest checkpoint, verified, once `ctx` may see it (`IdentityMismatch`) and it is a run of this driver's (`CheckpointConflict`). */
  async #latestOwn(runId: string, ctx: Identity | undefined): Promise<CheckpointBody> {
    const latest = await DurableRun.latest(this.#store, this.#sealer, runId);
    resumeIdentity(runId, latest.identity, ctx);
    const { kind, name } = this.#program;
    if (latest.kind !== kind || latest.name !== name) {
      throw new CheckpointConflict(
        runId,
        `the run belongs to ${latest.kind} ${JSON.stringify(latest.name)}, not ${kind} ${JSON.stringify(name)}.`,
      );
    }
    return latest;
  }

  /**
   * Goes on with a run from its last checkpoint: claims it (one worker wins),
   * replays finished calls, and fails closed on calls in doubt. A paused run
   * comes back as its paused result.
   */
  recover(runId: string, options: RecoverOptions = {}): Promise<DriveResult<R>> {
    return this.#recover(runId, options, false);
  }

  /**
   * Cancels a run that has not ended, even one a worker drives, in this process or another (it is fenced): saved
   * `failed` with `Cancelled: <reason>`; no retry goes on from it. Returns the step it was saved as.
   */
  async cancel(runId: string, reason: string, options: { readonly ctx?: Identity } = {}): Promise<number> {
    // Its data is not read as this program's: a run of another version (or graph) is cancelled as well.
    const latest = await this.#latestOwn(runId, options.ctx);
    const at = { store: this.#store, sealer: this.#sealer, lease: this.#lease, kind: this.#program.kind };
    return saveCancelled({ ...at, events: this.#events }, latest, readEnvelope(runId, latest.data), reason);
  }

  /**
   * Goes on with a failed run from its last checkpoint, with a new segment:
   * the calls its tools' errors ended run again (their attempts start over),
   * finished calls replay. A cancelled run does not go on.
   */
  retry(runId: string, options: RecoverOptions = {}): Promise<DriveResult<R>> {
    return this.#recover(runId, options, true);
  }

  /** True when a run that waits for events no longer holds the wait's lease: an event was sent (or a save saw one). */
  async #eventCame(runId: string, waitsFor: readonly string[] | undefined): Promise<boolean> {
    return waitsFor !== undefined && (await this.#store.leaseOf(runId))?.owner !== WAITING;
  }

  async #recover(runId: string, options: RecoverOptions, retrying: boolean): Promise<DriveResult<R>> {
    options.signal?.throwIfAborted();
    const decided = options.decide === undefined ? undefined : readInDoubtDecisions(options.decide, this.#codec);
    const by = decidedBy(options.by, this.#lease.owner);
    const opened = await this.open(runId, options.ctx, retrying);
    const { latest } = opened;
    if (latest.status === "paused") {
      const { pending, program } = opened.envelope;
      // A run paused with no pending call waits for outside input (a conversation's next message): its result as it stands.
      if (pending.length === 0) return this.#program.result(program, { runId, step: latest.step });
      return { status: "paused", runId, step: latest.step, approvals: pending };
    }
    if (!retrying) {
      const stored = { ...opened.envelope, program: this.#program.write(opened.envelope.program) };
      const at = { store: this.#store, sealer: this.#sealer, lease: this.#lease, kind: this.#program.kind };
      const why = await cancelOrphan({ ...at, events: this.#events }, latest, stored);
      if (why !== undefined) throw new CheckpointConflict(runId, `it was cancelled: ${why}.`);
    }
    // An asleep run is woken by the first claim after its wake time, or, waiting for events, once one was sent (it
    // released the wait's lease): until then it stays as it was saved. The claim that wakes it saves it awake.
    const { asleep, waitsFor, ...envelope } = opened.envelope;
    if (asleep !== undefined && asleep > Date.now() && !(await this.#eventCame(runId, waitsFor)))
      return {
        status: "asleep",
        runId,
        step: latest.step,
        until: asleep,
        ...(waitsFor === undefined ? {} : { waitsFor }),
      };
    // Decisions are checked on the log as it stands before the claim: one on a call not in doubt writes nothing.
    if (decided !== undefined) await checkBeforeClaim(this.#store, this.#sealer, latest, envelope.round, decided);
    const why = retrying ? "retry" : asleep !== undefined ? "wake" : decided !== undefined ? "decision" : "recover";
    const attempt = this.#telemetry.attempt(runId, why, envelope.trace);
    const traced = this.#telemetry.traced(envelope, attempt);
    // A retry's claim saves the run without its error, a woken run's without its wake time, a traced one with its new
    // attempt; any other recovery's, the latest checkpoint's data as it is.
    const claim = {
      ...this.#drives,
      takeOver: options.takeOver,
      callsFrom: envelope.roundStart,
      ...(retrying || asleep !== undefined || traced !== envelope ? { data: this.#drive.json(traced) } : {}),
    };
    const claimed = await this.#telemetry.begun(attempt, () =>
      DurableRun.claim(this.#store, this.#sealer, latest, claim),
    );
    const takenOver = this.#telemetry.claimed(attempt, why, latest, envelope, claimed.records);
    options.onClaimed?.({ step: claimed.checkpoint.step, takenOver });
    const { run, checkpoint } = claimed;
    return holding(run, attempt, options.signal, async () => {
      await this.#drive.saved(checkpoint, envelope.program);
      let records = claimed.records;
      if (retrying) records = await reopenFailed(this.#store, this.#sealer, run, records, envelope.round);
      if (decided !== undefined)
        ({ records } = await decideAtClaim(this.#store, this.#sealer, run, records, envelope.round, decided, by));
      const plan = await this.#drive.plan(run, records, envelope.round, options, checkpoint.data);
      await emit(this.#events, {
        type: "run.recovered",
        runId,
        kind: this.#program.kind,
        step: checkpoint.step,
        owner: run.lease.owner,
        replayed: refs(plan.finished.values()),
        rerun: refs(plan.inDoubt.values()),
        decided: refs(plan.decided.values()),
        ...(asleep === undefined ? {} : { woke: true }),
      });
      return this.#drive.steps(run, this.#drive.claimed(run, traced, records), plan);
    });
  }

  /**
   * True when recovering the run now would stop for a decision (a call in doubt of a tool that is not idempotent):
   * reads the run and its log and plans its round, claiming and writing nothing. A worker asks it before it claims
   * again a run it left waiting, so workers do not take turns claiming it.
   */
  async needsDecision(runId: string, options: RecoverOptions = {}): Promise<boolean> {
    const { latest, envelope } = await this.open(runId, options.ctx);
    if (latest.status === "paused") return false;
    const records = await readCallLog(this.#store, this.#sealer, runId, latest.calls, envelope.roundStart);
    try {
      planReplay(runId, records, envelope.round, this.#program.registry, {
        ...options,
        forkedFrom: envelope.forkedFrom,
      });
      return false;
    } catch (error) {
      if (error instanceof RecoveryNeedsDecision) return true;
      throw error;
    }
  }

  /** Recovers the program's claimable runs, several at once, yielding each outcome as it settles (`recoverEach`). */
  recoverEach(options: RecoverEachOptions = {}): AsyncGenerator<Recovered<R>> {
    return recoverEach(this, options);
  }

  /** `recoverEach`, collected: each claimable run's id mapped to its result or to the error that stopped it. */
  recoverAll(options: RecoverEachOptions = {}): Promise<Map<string, DriveResult<R> | Error>> {
    return recoverAll(this, options);
  }

  /**
   * Resumes a paused run with answers to its pending approvals, stored with the claim before any is spent (a second
   * resume of the pause is `CheckpointConflict`). `program` replaces the program's data with the claim (a
   * conversation's next message).
   */
  async resume(
    opened: OpenedRun<D>,
    answers: ApprovalAnswers,
    options: RecoverOptions = {},
    program?: D,
  ): Promise<DriveResult<R>> {
    const { latest } = opened;
    const envelope = program === undefined ? opened.envelope : { ...opened.envelope, program };
    const attempt = this.#telemetry.attempt(latest.runId, "resume", envelope.trace);
    const resumed = this.#telemetry.traced(answered(latest, envelope, answers), attempt);
    options.signal?.throwIfAborted();
    faultPoint("resume.before-answers-save");
    const claim = {
      ...this.#drives,
      takeOver: options.takeOver,
      data: this.#drive.json(resumed),
      callsFrom: resumed.roundStart,
    };
    const claiming = () => DurableRun.claim(this.#store, this.#sealer, latest, claim);
    const { run, checkpoint, records } = await this.#telemetry.begun(attempt, claiming);
    this.#telemetry.counted("runsClaimed", { "durable.claim": "resume" });
    faultPoint("resume.after-answers-save");
    return holding(run, attempt, options.signal, async () => {
      await this.#drive.saved(checkpoint, resumed.program);
      const plan = await this.#drive.plan(run, records, resumed.round, options, checkpoint.data);
      return this.#drive.steps(run, this.#drive.claimed(run, resumed, records), plan);
    });
  }
}

function refs(calls: Iterable<CallRef>): CallRef[] {
  return [...calls].map(({ callId, tool }) => ({ callId, tool }));
}
