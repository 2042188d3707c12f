import type { RunKind, LeaseView, RunStatus } from "@durable/core/store";
import {
  type CheckpointStore,
  DurableError,
  type DurableEvent,
  type Identity,
  type InDoubtCall,
  type JsonValue,
  type PendingCall,
} from "@durable/core";
import {
  type BoundAnswer,
  type CheckpointBody,
  classifyCalls,
  type ForkedFrom,
  openHistory,
  isJsonObject,
  openCheckpoint,
  readCallLog,
  readEnvelope,
  type Sealer,
  type OperatorMark,
  operatorMark,
} from "@durable/core/runner";
import { type CallView, callViews } from "./call-view.js";
import { type Change, diffJson } from "./diff.js";
import { type InboxView, readInboxView } from "./inbox-view.js";
import { type RunVersion, runVersion } from "./run-version.js";
import { type Waiting, waitingFor } from "./waiting.js";

/** One checkpoint of a run as its page shows it: what it sealed, and how its program's data changed since the step before. */
export interface StepView {
  readonly step: number;
  readonly status: RunStatus;
  readonly segment: number;
  readonly round: number;
  /** A claim: the first step of a new segment (a recovery, a resume, a retry, an operator's action). */
  readonly claim: boolean;
  /** A recovery: a claim of a run its worker left running (it died, or lost its lease), not a resume, a wake or an operator's action. */
  readonly recovery: boolean;
  /** When it was saved, from the events (when an event log is given). */
  readonly at?: string;
  /** The program's own data: a flow's state, frontier and visits; a loop's messages and stage. */
  readonly program: JsonValue;
  /** The changes of `program` from the step before (the whole of it for step 0). */
  readonly changes: readonly Change[];
  readonly pending: readonly PendingCall[];
  readonly answers: readonly BoundAnswer[];
  readonly error?: string;
  readonly cancelled: boolean;
  /** An operator's action saved this checkpoint: who, what, when (a worker's claim after it carries the mark on, and is not marked). */
  readonly operator?: OperatorMark;
}

/** A run as its page shows it, read from the store (every read verified) and enriched by its events. */
export interface RunDetail {
  readonly runId: string;
  readonly name: string;
  readonly kind: RunKind;
  readonly status: RunStatus;
  readonly step: number;
  readonly segment: number;
  readonly identity: Identity;
  /** The version of the code that started it, when its start recorded one (`runVersion`). */
  readonly version?: RunVersion;
  /** The run and step it was forked from (`forkRun`), when it is a fork. */
  readonly forkedFrom?: ForkedFrom;
  readonly lease: LeaseView | undefined;
  /** What it waits for before it goes on, or undefined (a worker drives it, or it ended). */
  readonly waiting: Waiting | undefined;
  /** How many times a worker recovered it. */
  readonly recoveries: number;
  /** The steps of the timeline's page asked for, oldest first (`Timeline`). */
  readonly steps: readonly StepView[];
  readonly timeline: Timeline;
  readonly calls: readonly CallView[];
  /** Calls of the current round in doubt, when the run waits for a decision (no worker holds it): unless their tools are idempotent, a recovery stops for one. */
  readonly inDoubt: readonly InDoubtCall[];
  /** Calls waiting on an approval (a paused run). */
  readonly pending: readonly PendingCall[];
  /** A tool loop's messages at its latest step. */
  readonly messages: readonly JsonValue[] | undefined;
  readonly error?: string;
  readonly cancelled: boolean;
  readonly events: readonly DurableEvent[];
  /** The events sent to it (`sendEvent`), oldest first; undefined for a store without the events capability. */
  readonly inbox: InboxView | undefined;
  /** Lines of the event log that are not events, skipped (absent when there are none). */
  readonly skippedEventLines?: number;
}

/** Which steps of the run a page shows: a long run's timeline is read whole (every checkpoint verified) and shown a page at a time. */
export interface Timeline {
  /** Steps the run has saved. */
  readonly total: number;
  /** The first and last step shown. */
  readonly first: number;
  readonly last: number;
}

/** The page of the timeline asked for: up to `size` steps before step `before` (default: the newest). */
export interface TimelinePage {
  readonly size: number;
  readonly before?: number;
}

/** Steps a run's page shows at once: a run of 1,000 steps opens on its newest 100. */
export const TIMELINE_PAGE = 100;

/** A run that could not be read: why, and the code of the @durable error when there is one. */
export interface RunProblem {
  readonly runId: string;
  readonly problem: string;
  readonly code?: string;
}

/**
 * Reads one run: every checkpoint (`history`, or the latest alone for a
 * store without it), the call log and the inbox, each verified with the key;
 * its steps with their diffs, its calls marked. Reading changes nothing. A run that
 * does not verify is a `RunProblem`, never shown unchecked.
 */
export async function readRun(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  events: readonly DurableEvent[],
  page: TimelinePage = { size: TIMELINE_PAGE },
): Promise<RunDetail | RunProblem | undefined> {
  try {
    const rows = store.history === undefined ? [await store.latest(runId)] : await store.history(runId);
    if (rows.length === 0) return undefined;
    const bodies = openHistory(sealer, runId, rows);
    const latest = bodies.at(-1) as CheckpointBody;
    const [records, lease] = await Promise.all([readCallLog(store, sealer, runId, latest.calls), store.leaseOf(runId)]);
    const at = page.before === undefined ? -1 : bodies.findIndex((body) => body.step >= (page.before as number));
    const end = at === -1 ? bodies.length : Math.max(at, 1);
    const shown = { from: Math.max(0, end - page.size), to: end };
    const all = stepViews(runId, bodies, events, shown);
    const steps = all.slice(shown.from, shown.to);
    const last = all.at(-1) as StepView;
    const round = classifyCalls(records, last.round);
    const envelope = readEnvelope(runId, latest.data);
    const now = lease?.now ?? Date.now();
    const waiting = waitingFor(latest, envelope, round, lease !== undefined && lease.expiresAt > now, now);
    const inbox = await readInboxView(store, sealer, runId, envelope, round);
    const version = runVersion(latest.data);
    return {
      runId,
      name: latest.name,
      kind: latest.kind,
      status: latest.status,
      step: latest.step,
      segment: latest.segment,
      identity: latest.identity,
      ...(version === undefined ? {} : { version }),
      ...(envelope.forkedFrom === undefined ? {} : { forkedFrom: envelope.forkedFrom }),
      lease,
      waiting,
      recoveries: all.filter((step) => step.recovery).length,
      steps,
      timeline: { total: all.length, first: steps[0]?.step ?? 0, last: steps.at(-1)?.step ?? 0 },
      calls: callViews(runId, records, { steps: all, current: round, answers: envelope.answers, waiting }, events),
      inDoubt: waiting?.for === "decision" ? [...round.inDoubt.values()] : [],
      pending: last.pending,
      messages: latest.kind === "loop" ? messagesOf(last.program) : undefined,
      ...(last.error === undefined ? {} : { error: last.error }),
      cancelled: last.cancelled,
      events,
      inbox,
    };
  } catch (error) {
    if (error instanceof DurableError && error.code === "CHECKPOINT_NOT_FOUND") return undefined;
    return problemOf(store, sealer, runId, error);
  }
}

/** A run's step and status from its latest checkpoint alone, verified: what a page's refresh asks, whatever the run's size. */
export async function readHead(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
): Promise<{ readonly step: number; readonly status: RunStatus } | RunProblem | undefined> {
  try {
    const latest = openCheckpoint(sealer, await store.latest(runId));
    return { step: latest.step, status: latest.status };
  } catch (error) {
    if (error instanceof DurableError && error.code === "CHECKPOINT_NOT_FOUND") return undefined;
    return problemOf(store, sealer, runId, error);
  }
}

/** The code of a run whose latest checkpoint verifies, encrypted, read by a console without the encryption key. */
const ENCRYPTED = "ENCRYPTED";

/**
 * Why a run could not be read, as a page says it. A console without the
 * encryption key that cannot open a run whose latest checkpoint is encrypted
 * and verifies says so: the run is intact, its content out of reach.
 */
export async function problemOf(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  error: unknown,
): Promise<RunProblem> {
  if (error instanceof DurableError && error.code === "CHECKPOINT_STORE_CORRUPT" && !sealer.encrypts) {
    const latest = await store.latest(runId).catch(() => undefined);
    if (latest !== undefined && sealer.verifiesEncrypted("checkpoint", latest.sealed))
      return {
        runId,
        problem:
          "Encrypted: its latest checkpoint verifies with the key, and the console has no encryption key to show it (--encryption-key-file or DURABLE_ENCRYPTION_KEY).",
        code: ENCRYPTED,
      };
  }
  const problem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return error instanceof DurableError ? { runId, problem, code: error.code } : { runId, problem };
}

/** Every step's view; what each changed is worked out only for the steps `shown` (indexes, `to` excluded). */
function stepViews(
  runId: string,
  bodies: readonly CheckpointBody[],
  events: readonly DurableEvent[],
  shown: { readonly from: number; readonly to: number },
): StepView[] {
  const savedAt = new Map<number, string>();
  for (const event of events) if (event.type === "checkpoint.saved") savedAt.set(event.step, event.at);
  let before: StepView | undefined;
  let carried: OperatorMark | undefined;
  // Segments an operator's action claimed: a worker's claim after one goes on with the action, it recovers nothing.
  const acted = new Set<number>();
  // A claim of a run saved asleep (or waiting for an event) wakes it: no worker left it running.
  let slept = false;
  return bodies.map((body, index) => {
    const envelope = readEnvelope(runId, body.data);
    const at = savedAt.get(body.step);
    const found = operatorMark(body.data);
    // A worker's claim keeps the data it claims, the operator's mark with it: that mark is not a second action.
    const mark = found !== undefined && !sameMark(found, carried) ? found : undefined;
    carried = found;
    const claim = before !== undefined && body.segment > before.segment;
    if (mark !== undefined) acted.add(body.segment);
    const view: StepView = {
      step: body.step,
      status: body.status,
      segment: body.segment,
      round: envelope.round,
      claim,
      recovery: claim && mark === undefined && before?.status === "running" && !acted.has(before.segment) && !slept,
      ...(at === undefined ? {} : { at }),
      program: envelope.program,
      changes: index >= shown.from && index < shown.to ? diffJson(before?.program, envelope.program) : [],
      pending: envelope.pending,
      answers: envelope.answers,
      ...(envelope.error === undefined ? {} : { error: envelope.error }),
      cancelled: envelope.cancelled === true,
      ...(mark === undefined ? {} : { operator: mark }),
    };
    before = view;
    slept = envelope.asleep !== undefined;
    return view;
  });
}

function sameMark(a: OperatorMark, b: OperatorMark | undefined): boolean {
  return b !== undefined && a.action === b.action && a.by === b.by && a.at === b.at;
}

function messagesOf(program: JsonValue): JsonValue[] | undefined {
  const messages = isJsonObject(program) ? program["messages"] : undefined;
  return Array.isArray(messages) ? messages : undefined;
}
