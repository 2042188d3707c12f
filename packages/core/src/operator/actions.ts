import { PLAIN_JSON } from "../base/codec.js";
import { CheckpointConflict, InvalidInput } from "../base/errors.js";
import { checkRunVersion, type RunVersion } from "../run/versions.js";
import { isJsonObject, isString, type JsonObject, type JsonValue } from "../base/json.js";
import { assertStorableText } from "../base/names.js";
import { checkCodec, checkOptions, type OptionTable } from "../base/option-checks.js";
import type { ApprovalAnswers } from "../calls/approvals.js";
import type { CallRecord } from "../log/call-log.js";
import { saveCancelled } from "../run/cancel.js";
import { DurableRun } from "../run/durable-run.js";
import { envelopeJson, readEnvelope, type RunEnvelope } from "../run/envelope.js";
import {
  checkBeforeClaim,
  decideAtClaim,
  type InDoubtDecisions,
  readInDoubtDecisions,
} from "../run/in-doubt-decisions.js";
import { leaseTerms } from "../run/lease.js";
import { reopenFailed } from "../run/reopen.js";
import { answered, assertReason, goesOn, retried, woken } from "../run/run-changes.js";
import { runStorage } from "../run/storage.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore, LeaseTerms, RunKind } from "../store/contract.js";
import { OPERATOR_OPTIONS, type OperatorAction, type OperatorMark, type OperatorOptions } from "./options.js";

/*
 * What an operator (a console, a script) does to runs with only the store
 * and the key, far from the workers and their flow definitions: each action
 * is a compare-and-set on the run's latest step, refused when the run moved
 * on since the operator looked, recorded with who acted, and left for the
 * worker serving the run to act on (it finds the run claimable).
 */

/** What each action works with once its options are checked. */
export interface Acting {
  readonly action: OperatorAction;
  /** The function acting, for messages. */
  readonly where: string;
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly options: OperatorOptions;
  /** The lease held while the action is recorded. */
  readonly lease: LeaseTerms;
}

/** What an action changes: the envelope it claims the run with, and the writes that follow the claim. */
interface Change<T> {
  readonly envelope: RunEnvelope;
  /** Writes after the claim (reopened or decided calls), counted by a checkpoint saved after them. */
  readonly after?: (run: DurableRun, records: readonly CallRecord[]) => Promise<T>;
  /** The claim keeps the run paused (a migration of a run that waits for answers or a message). */
  readonly paused?: boolean;
  /** The claim takes the run from its sleep's lease: the step read is asleep (a claim of the next step wins over a worker that woke it). */
  readonly fromSleep?: boolean;
}

/** Checks an action's options (`table`: the operator's, or an action's own that spreads them) and who acts. */
export function acting(
  action: OperatorAction,
  where: string,
  options: OperatorOptions,
  table: OptionTable<OperatorOptions> = OPERATOR_OPTIONS,
): Acting {
  checkOptions(where, options, table);
  if (typeof options.by !== "string" || options.by.length === 0 || options.by.length > 200)
    throw new InvalidInput(`${where}: by must be a string of 1 to 200 characters: who acts.`);
  assertStorableText(options.by, "by");
  if (options.expectStep !== undefined && (!Number.isSafeInteger(options.expectStep) || options.expectStep < 0))
    throw new InvalidInput(`${where}: expectStep must be a whole number ≥ 0, not ${String(options.expectStep)}.`);
  checkCodec(where, options.codec);
  return { action, where, ...runStorage(where, options), options, lease: leaseTerms(where, options.lease) };
}

/** The run's latest checkpoint, verified, refused when it is not the step the operator saw. */
export async function latestSeen(at: Acting, runId: string): Promise<CheckpointBody> {
  const latest = await DurableRun.latest(at.store, at.sealer, runId);
  const seen = at.options.expectStep;
  if (seen !== undefined && latest.step !== seen)
    throw new CheckpointConflict(
      runId,
      `the run changed since step ${seen} was read (it is at step ${latest.step}, ${latest.status}): look at it again.`,
    );
  return latest;
}

/** Who acted, how and when, as sealed beside the envelope. */
export function mark(at: Acting, reason?: string): JsonObject {
  const made: OperatorMark = {
    action: at.action,
    by: at.options.by,
    at: new Date().toISOString(),
    ...(reason === undefined ? {} : { reason }),
  };
  return { operator: { ...made } };
}

/**
 * Does one action: reads the run the operator saw, changes its envelope (the
 * action's refusals come first), claims it with the change and the operator's
 * mark (of racing actions and workers one wins), makes the writes that follow
 * the claim and saves a checkpoint counting them, then releases the run: the
 * worker serving it goes on. Returns the step saved last and what the writes gave.
 */
async function act<T>(
  at: Acting,
  runId: string,
  change: (latest: CheckpointBody, envelope: RunEnvelope) => Change<T> | Promise<Change<T>>,
  takeOver = false,
  reason?: string,
): Promise<{ readonly step: number; readonly after: T | undefined }> {
  const latest = await latestSeen(at, runId);
  const { envelope, after, paused, fromSleep } = await change(latest, readEnvelope(runId, latest.data));
  const data = { ...envelopeJson(envelope), ...mark(at, reason) };
  // No takeOver but a wake's: a drive's live lease, in this process or another, refuses the action (LeaseHeld).
  // An action of one write (approve, wake) takes no lease, so its run's queue, full or not, never refuses it.
  const claim = {
    lease: at.lease,
    data,
    ...(takeOver || fromSleep === true ? { takeOver: true } : {}),
    ...(after === undefined ? { leased: false } : {}),
    ...(paused === true ? { paused } : {}),
  };
  const { run, checkpoint, records } = await DurableRun.claim(at.store, at.sealer, latest, claim);
  try {
    if (after === undefined) return { step: checkpoint.step, after: undefined };
    const done = await after(run, records);
    return { step: (await run.save("running", data)).step, after: done };
  } finally {
    await run.stopLease(true);
  }
}

/**
 * Answers pending approvals of a paused run: binds each answer to its call
 * and arguments and stores them with a claim (one answer wins the pause),
 * then releases the run. The worker serving it claims it and spends them, as
 * `resume` would. `InvalidInput` for a call that is not pending. Returns the step saved.
 */
export async function approveRun(runId: string, answers: ApprovalAnswers, options: OperatorOptions): Promise<number> {
  const at = acting("approve", "approveRun", options);
  return (await act(at, runId, (latest, envelope) => ({ envelope: answered(latest, envelope, answers) }))).step;
}

/**
 * Records decisions on calls in doubt of a running run ahead of its
 * recovery: claims it (`LeaseHeld` while a worker holds it), appends one
 * `decided` record per call still in doubt, saves a checkpoint that counts
 * them, and releases the run. The next recovery, by any worker, acts on them.
 * A decision on a call that is not in doubt is `InvalidInput`, with nothing
 * written. Returns the call ids decided (a call that finished since keeps its outcome).
 */
export async function decideInDoubt(
  runId: string,
  decisions: InDoubtDecisions,
  options: OperatorOptions,
): Promise<string[]> {
  const at = acting("decide", "decideInDoubt", options);
  const decided = readInDoubtDecisions(decisions, options.codec ?? PLAIN_JSON);
  const { after } = await act(at, runId, async (latest, envelope) => {
    goesOn(latest, envelope);
    if (latest.status !== "running")
      throw new CheckpointConflict(runId, `the run is ${latest.status}: it waits for a resume, not a decision.`);
    await checkBeforeClaim(at.store, at.sealer, latest, envelope.round, decided);
    return {
      envelope,
      after: async (run, records) =>
        (await decideAtClaim(at.store, at.sealer, run, records, envelope.round, decided, options.by)).decided,
    };
  });
  return after ?? [];
}

/**
 * Asks for a failed run to go on: claims it with a new segment, reopens the
 * calls its tools' errors ended (their attempts start over), saves it
 * `running` without its error and releases it. The worker serving it claims
 * it and drives it, replaying every finished call. A cancelled run does not
 * go on. Returns the step saved.
 */
export async function retryRun(runId: string, options: OperatorOptions): Promise<number> {
  const at = acting("retry", "retryRun", options);
  const { step } = await act(at, runId, (latest, envelope) => ({
    envelope: retried(latest, envelope),
    after: (run, records) => reopenFailed(at.store, at.sealer, run, records, envelope.round),
  }));
  return step;
}

/**
 * Wakes a run asleep (`ctx.sleep`) or waiting for an event now: claims it
 * from its sleep's lease (a claim of the step the operator read: a worker
 * that woke it meanwhile makes it `CheckpointConflict`), saves it awake with
 * `wokenBefore`, the place in its log after every record so far, and
 * releases it. The worker serving it runs its round again: the sleeps and
 * wait deadlines recorded before that place are over (a wait with no event
 * times out), later ones are not. A run not asleep is `CheckpointConflict`.
 * Returns the step saved.
 */
export async function wakeRun(runId: string, options: OperatorOptions): Promise<number> {
  const at = acting("wake", "wakeRun", options);
  return (await act(at, runId, (latest, envelope) => ({ envelope: woken(latest, envelope) }), true)).step;
}

/** How a run moves to another version (`migrateRun`). */
export interface Migration {
  /** The version it moves to: only a worker serving that version goes on with it. */
  readonly to: RunVersion;
  /** Its program's data on the new version's code (a flow's state, checked by that version's schema); default: kept. */
  readonly program?: (program: JsonObject) => JsonObject | Promise<JsonObject>;
  /** Why, recorded with the migration. */
  readonly reason?: string;
  /** The run must be of this kind and name (`CheckpointConflict` otherwise): the code it moves to is of them. */
  readonly of?: { readonly kind: RunKind; readonly name: string };
}

/**
 * Moves a run that has not ended to another version of its code: claims it
 * (`LeaseHeld` while a worker drives it; an asleep or waiting run is taken
 * from its sleep's lease, as a wake takes it, and a worker that claims it
 * finds it asleep again, or waiting: its round runs again), saves it with the
 * version `to` and, when given, its program's data as `migration.program`
 * makes it, recorded with who, when and why, and releases it. A paused run
 * stays paused. Only code of version `to` goes on with it from then on.
 * Returns the step saved.
 */
export async function migrateRun(runId: string, migration: Migration, options: OperatorOptions): Promise<number> {
  const at = acting("migrate", "migrateRun", options);
  const to = checkRunVersion("migrateRun", migration.to);
  if (to === undefined) throw new InvalidInput("migrateRun: to must name the version the run moves to.");
  const { reason } = migration;
  if (reason !== undefined) assertReason("migrateRun", reason);
  const change = async (latest: CheckpointBody, envelope: RunEnvelope): Promise<Change<undefined>> => {
    goesOn(latest, envelope);
    const { of } = migration;
    if (of !== undefined && (latest.kind !== of.kind || latest.name !== of.name))
      throw new CheckpointConflict(
        runId,
        `it is a run of ${latest.kind} ${JSON.stringify(latest.name)}, not of ${of.kind} ${JSON.stringify(of.name)}.`,
      );
    const program = migration.program === undefined ? envelope.program : await migration.program(envelope.program);
    if (!isJsonObject(program)) throw new InvalidInput("migrateRun: program must give the run's data as an object.");
    // A sleep's or a wait's lease is no drive's: the migration takes the run from it, as a wake does. It claims the
    // step it read asleep, so a worker that woke the run since took that step, and the claim is refused.
    const fromSleep = latest.status === "running" && envelope.asleep !== undefined;
    return { envelope: { ...envelope, version: to, program }, paused: latest.status === "paused", fromSleep };
  };
  const { step } = await act(at, runId, change, false, reason);
  return step;
}

/**
 * Cancels a run that has not ended, even one a worker drives (it is fenced):
 * saved `failed` with `Cancelled: <reason>`, which no retry goes on from.
 * Returns the step it was saved as.
 */
export async function cancelRun(runId: string, reason: string, options: OperatorOptions): Promise<number> {
  const at = acting("cancel", "cancelRun", options);
  const latest = await latestSeen(at, runId);
  const envelope = readEnvelope(runId, latest.data);
  const where = { store: at.store, sealer: at.sealer, lease: at.lease, kind: latest.kind, events: undefined };
  return saveCancelled(where, latest, envelope, reason, mark(at, reason));
}

/** The operator's mark a checkpoint's data holds, or undefined (a worker's checkpoint). */
export function operatorMark(data: JsonValue): OperatorMark | undefined {
  const found = isJsonObject(data) ? data["operator"] : undefined;
  if (!isJsonObject(found)) return undefined;
  const { action, by, at, reason } = found;
  if (!isString(action) || !isString(by) || !isString(at)) return undefined;
  if (!["approve", "decide", "retry", "cancel", "wake", "migrate", "fork"].includes(action)) return undefined;
  return { action: action as OperatorAction, by, at, ...(isString(reason) ? { reason } : {}) };
}
