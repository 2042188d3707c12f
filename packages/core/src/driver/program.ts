import type { StreamTerms, StreamWriter } from "../log/run-stream.js";
import type { JsonObject, JsonValue } from "../base/json.js";
import type { InDoubtDecisions } from "../run/in-doubt-decisions.js";
import type { CallLog, CallRecord } from "../log/call-log.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { RunEnvelope } from "../run/envelope.js";
import type { EventSink, LoopStage } from "../log/events.js";
import type { ValueCodec } from "../base/codec.js";
import type { CallScope } from "../calls/call-scope.js";
import type { Identity } from "../base/identity.js";
import type { PendingCall } from "../calls/replay.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore, LeaseTerms, QueuePlace, RunKind } from "../store/contract.js";
import type { Settled } from "../base/concurrent.js";
import type { ToolRegistry } from "../calls/tools.js";
import type { RunVersion } from "../run/versions.js";

// The shapes of the run driver: what a program gives it, what it is given, what it returns.

/** A run paused for answers to its pending approvals: what `run`, `recover` and `resume` return then. */
export interface PausedResult {
  readonly status: "paused";
  readonly runId: string;
  readonly step: number;
  readonly approvals: readonly PendingCall[];
}

/**
 * A run asleep (`ctx.sleep`) or waiting for an event (`ctx.waitForEvent`):
 * saved with its lease held for the sleep, so a worker wakes it (claims it
 * and runs its round again) once `until` passed, or, when it waits for
 * events, once one is sent. What `run`, `recover` and `resume` return then.
 */
export interface AsleepResult {
  readonly status: "asleep";
  readonly runId: string;
  readonly step: number;
  /** When it wakes: ms since the epoch, by the clock of the worker that put it to sleep. */
  readonly until: number;
  /** The names of the events it waits for, when it waits for any. */
  readonly waitsFor?: readonly string[];
}

/** Where a drive leaves a run: the program's result, or paused, or asleep. */
export type DriveResult<R> = R | PausedResult | AsleepResult;

/** What one step of a program leaves, by what the driver does next. */
export type StepOutcome<D> =
  /** A call waits on an approval's answer: the run is saved paused, at the start of the round, to run it again once answered. */
  | { readonly next: "pause" }
  /** A sleep of the round has not passed: the run is saved asleep until `until`, at the start of the round, to run it again then. */
  | { readonly next: "sleep"; readonly until: number }
  /** The step's data is saved `running`, and the next step goes on. */
  | ({ readonly next: "step" } & SteppedData<D>)
  /**
   * The run waits for input from outside (a conversation's next message):
   * saved `paused` with this data and no pending call, and the program's
   * result returned. A resume with new data goes on from it.
   */
  | ({ readonly next: "wait" } & SteppedData<D>)
  /** The run ended: its checkpoint is saved `done`. */
  | ({ readonly next: "done" } & SteppedData<D>);

/** The data a step leaves, and whether its round is over. */
export interface SteppedData<D> {
  readonly data: D;
  /** Every call of the round is made: the next step works in the next round, and the round's answers are spent. */
  readonly roundOver: boolean;
}

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
  /** The run's stream, when its driver writes one (`DriverOptions.stream`): the step's parts go to it. */
  readonly stream?: StreamWriter | undefined;
}

/**
 * A kind of run on the driver (a flow, a tool loop): how it reads and writes
 * its own data, how it takes one step, and what its result is. The driver
 * does the rest: open, checks, claim, replay plan, saves and events.
 */
export interface RunProgram<D, R> {
  readonly kind: RunKind;
  /** The flow's or loop's name: the run's `name`. */
  readonly name: string;
  /** The version of its code, sealed by every run it starts: only code of a run's own version goes on with it. */
  readonly version?: RunVersion | undefined;
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
  claimed?(data: D, records: readonly CallRecord[], runId: string): D;
  /** Takes one step: a superstep, a model reply, a round of tool calls. */
  step(data: D, context: StepContext): Promise<StepOutcome<D>>;
  /** The result of a run that is done. */
  result(data: D, at: { readonly runId: string; readonly step: number }): R;
  /** What a done child run gives its parent (`startChild`), as stored: a flow's state (default: its whole data as written). */
  output?(data: D): JsonValue;
  /** What `checkpoint.saved` carries for it: a flow's name, a loop's stage. */
  saved(data: D): { readonly name?: string; readonly stage?: LoopStage };
}

/** Where the driver keeps runs, and where it reports. */
export interface DriverOptions {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly events?: EventSink | undefined;
  /** With an encrypting sealer, events carry call arguments and error messages too (default: they are withheld). */
  readonly plainEvents?: boolean | undefined;
  /** The worker's lease terms (default: this process's worker id, 30 s). */
  readonly lease?: LeaseTerms | undefined;
  /** How tool results (and a flow's state) that are not plain JSON are stored (default: they must be plain JSON). */
  readonly codec?: ValueCodec | undefined;
  /** At most this many changes between two snapshots (`StorageOptions.snapshotEvery`). */
  readonly snapshotEvery?: number | undefined;
  /** Each drive writes its run's stream (a store with the streams capability, or `InvalidInput`). */
  readonly stream?: StreamTerms | undefined;
}

/** Options of `recover`, `recoverAll` and `resume`. */
export interface RecoverOptions {
  /** Must name the run's own identity; without it the stored user and thread are restored. */
  readonly ctx?: Identity;
  /** Run calls in doubt again instead of raising `RecoveryNeedsDecision`: a decision of `"rerun"` on each. */
  readonly rerunInDoubt?: boolean;
  /**
   * Decisions on calls in doubt, by call id (`RecoveryNeedsDecision.calls`):
   * each is recorded in the call log, with `by` and the time, before anything
   * acts on it. A decision on a call that is not in doubt is `InvalidInput`,
   * and nothing is written.
   */
  readonly decide?: InDoubtDecisions;
  /** Who decides, recorded with each decision (default: the worker's lease owner). */
  readonly by?: string;
  /** Claim the run even while another worker's lease on it is live (that worker is fenced): for operators who know it is gone. */
  readonly takeOver?: boolean;
  /**
   * Gives the run up when aborted: its lease is released at once, and the
   * drive stops before its next save, rejecting with the signal's reason. The
   * worker aborts so when its stop deadline passes.
   */
  readonly signal?: AbortSignal;
  /**
   * Told once a recovery's claim landed, before anything runs: a worker takes a queue's runs one claim at a time by
   * it, and logs a takeover.
   */
  readonly onClaimed?: (claim: ClaimLanded) => void;
}

/** A recovery's claim that landed: the step it was saved as, and whether it took the run from a drive that held it (one that died, or gave it up). */
export interface ClaimLanded {
  readonly step: number;
  readonly takenOver: boolean;
}

/** How `RunDriver.submit` starts a run for the fleet. */
export interface SubmitOptions {
  readonly runId: string;
  readonly ctx?: Identity | undefined;
  /** What a run id that exists already gives: its run (the default), or `CheckpointConflict`. */
  readonly ifExists?: "handle" | "error";
  /** The run's queue place, for a run started on a queue. */
  readonly queue?: QueuePlace | undefined;
}

/** Runs a worker serves: a flow's (`runner.served(flow)`) or a tool loop's (`servedToolLoops(…)`). */
export interface ServedRuns {
  readonly kind: RunKind;
  readonly name: string;
  /** The version of the code serving them: a worker may serve several of one name, each going on with its own runs. */
  readonly version?: RunVersion | undefined;
  readonly store: CheckpointStore;
  recover(runId: string, options: RecoverOptions): Promise<unknown>;
  /** Whether recovering the run now would stop for a decision, claiming nothing (`RunDriver.needsDecision`). */
  needsDecision?(runId: string, options: RecoverOptions): Promise<boolean>;
}

/** Options of `recoverEach` and `recoverAll`. */
export interface RecoverEachOptions extends RecoverOptions {
  /** How many runs are recovered at once (default 8). */
  readonly concurrency?: number;
}

/** One run's outcome in `recoverEach`: its result, or the error that stopped it. */
export type Recovered<R> = Settled<string, DriveResult<R>>;

/** A run's latest checkpoint, checked for this program and caller, with its data read. */
export interface OpenedRun<D> {
  readonly latest: CheckpointBody;
  readonly envelope: RunEnvelope<D>;
}
