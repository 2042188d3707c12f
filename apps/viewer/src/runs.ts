import {
  type CheckpointStore,
  DurableError,
  type DurableEvent,
  type Identity,
  type JsonValue,
  readJsonlEvents,
  type RunKind,
} from "@durable/core";
import { type CallRecord, DurableRun, readCallLog, type Sealer } from "@durable/core/runner";

/** What became of a call, as the viewer marks it. */
type CallMark =
  | "ran"
  | "tool error"
  | "replayed"
  | "rerun"
  | "retrying"
  | "decided"
  | "in doubt"
  | "waiting on approval";

export interface CallView {
  readonly callId: string;
  readonly tool: string;
  readonly mark: CallMark;
  /** Its records, oldest first: `segment:kind`. */
  readonly records: readonly string[];
  readonly result?: JsonValue;
  /** What its tool threw, when its outcome is a recorded error. */
  readonly error?: string;
}

interface StepView {
  readonly step: number;
  readonly status: string;
  readonly at: string;
  /** A loop's stage. */
  readonly stage?: string;
  /** This step is a recovery's claim. */
  readonly claim: boolean;
  /** This step is a claim whose recovery stopped for a decision on calls in doubt. */
  readonly needsDecision: boolean;
}

export interface RunView {
  readonly runId: string;
  readonly flow: string;
  readonly kind: RunKind | "?";
  /** The latest checkpoint's status, or `unreadable` when the store refused it (see `problem`). */
  readonly status: string;
  readonly step: number | undefined;
  readonly segment: number | undefined;
  readonly identity: Identity | undefined;
  readonly recovered: boolean;
  /** A recovery stopped for a decision on calls in doubt, and none went on since (`run.needs-decision`). */
  readonly needsDecision: boolean;
  readonly problem?: string;
  /** The code of the error behind `problem`, when @durable raised it: `CHECKPOINT_STORE_CORRUPT` when the seal does not verify. */
  readonly problemCode?: string;
  readonly steps: readonly StepView[];
  readonly calls: readonly CallView[];
  readonly events: readonly DurableEvent[];
  readonly lastAt: string;
}

/**
 * Reads every run the event log names, newest first: its latest checkpoint and
 * call log verified through core, its steps and recoveries from the events.
 * Reading changes nothing in the store.
 */
export async function readRuns(store: CheckpointStore, sealer: Sealer, eventLog: string): Promise<RunView[]> {
  const runs = await Promise.all(
    [...eventsByRun(eventLog)].map(([runId, events]) => readRun(store, sealer, runId, events)),
  );
  return runs.sort((a, b) => b.lastAt.localeCompare(a.lastAt) || b.runId.localeCompare(a.runId));
}

/** One run the event log names, or undefined when it names no such run. */
export async function readOneRun(
  store: CheckpointStore,
  sealer: Sealer,
  eventLog: string,
  runId: string,
): Promise<RunView | undefined> {
  const events = eventsByRun(eventLog).get(runId);
  return events === undefined ? undefined : readRun(store, sealer, runId, events);
}

function eventsByRun(eventLog: string): Map<string, DurableEvent[]> {
  const byRun = new Map<string, DurableEvent[]>();
  for (const event of readJsonlEvents(eventLog)) {
    const events = byRun.get(event.runId);
    if (events === undefined) byRun.set(event.runId, [event]);
    else events.push(event);
  }
  return byRun;
}

async function readRun(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  events: readonly DurableEvent[],
): Promise<RunView> {
  const recoveries = events.filter((e) => e.type === "run.recovered");
  const claims = new Set(recoveries.map((e) => e.step));
  const stops = new Set(events.flatMap((e) => (e.type === "run.needs-decision" ? [e.step] : [])));
  const steps = events.flatMap((e): StepView[] =>
    e.type === "checkpoint.saved"
      ? [
          {
            step: e.step,
            status: e.status,
            at: e.at,
            claim: claims.has(e.step),
            needsDecision: stops.has(e.step),
            ...(e.stage === undefined ? {} : { stage: e.stage }),
          },
        ]
      : [],
  );
  // The last word on the run's course: a stop for a decision stands until a recovery, a pause or an end follows it.
  const course = events
    .filter((e) => ["run.needs-decision", "run.recovered", "run.paused", "run.done", "run.failed"].includes(e.type))
    .at(-1);
  const named = events.find((e) => e.type === "checkpoint.saved" && e.flow !== undefined);
  const base = {
    runId,
    flow: named?.type === "checkpoint.saved" ? (named.flow ?? "") : "",
    recovered: recoveries.length > 0,
    needsDecision: course?.type === "run.needs-decision",
    steps,
    events,
    lastAt: events.at(-1)?.at ?? "",
  };
  try {
    const latest = await DurableRun.latest(store, sealer, runId);
    const records = await readCallLog(store, sealer, runId, latest.calls);
    const rerun = new Set(recoveries.flatMap((e) => e.rerun.map((c) => c.callId)));
    // A recovery lists the round's finished calls at its claim; one the rerun round did not take comes back as unreplayed.
    const unreplayed = new Set(
      events.flatMap((e) => (e.type === "checkpoint.saved" ? e.unreplayed.map((c) => c.callId) : [])),
    );
    const replayed = new Set(
      recoveries.flatMap((e) => e.replayed.map((c) => c.callId)).filter((callId) => !unreplayed.has(callId)),
    );
    return {
      ...base,
      flow: latest.flow,
      kind: latest.kind,
      status: latest.status,
      step: latest.step,
      segment: latest.segment,
      identity: latest.identity,
      calls: callViews(records, rerun, replayed),
    };
  } catch (error) {
    const problem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const code = error instanceof DurableError ? { problemCode: error.code } : {};
    return {
      ...base,
      kind: events[0]?.kind ?? "?",
      status: "unreadable",
      step: undefined,
      segment: undefined,
      identity: undefined,
      problem,
      ...code,
      calls: [],
    };
  }
}

/** One view per call, in the order calls first appear in the log. */
function callViews(
  records: readonly CallRecord[],
  rerun: ReadonlySet<string>,
  replayed: ReadonlySet<string>,
): CallView[] {
  const byCall = new Map<string, { own: CallRecord[]; last: CallRecord }>();
  for (const record of records) {
    const call = byCall.get(record.callId);
    if (call === undefined) byCall.set(record.callId, { own: [record], last: record });
    else {
      call.own.push(record);
      call.last = record;
    }
  }
  return [...byCall].map(([callId, { own, last }]) => {
    const done = own.find((r) => r.kind === "done");
    const failed = own.find((r) => r.kind === "error");
    const mark: CallMark = rerun.has(callId)
      ? "rerun"
      : own.some((r) => r.kind === "decided")
        ? "decided"
        : replayed.has(callId)
          ? "replayed"
          : done !== undefined
            ? "ran"
            : failed !== undefined
              ? "tool error"
              : last.kind === "pending"
                ? "waiting on approval"
                : last.kind === "failed"
                  ? "retrying"
                  : "in doubt";
    return {
      callId,
      tool: last.tool,
      mark,
      records: own.map((r) => `${r.segment}:${r.kind}`),
      ...(done?.result === undefined ? {} : { result: done.result }),
      ...(failed?.error === undefined ? {} : { error: failed.error }),
    };
  });
}

/** True when there are runs and not one of them verifies: the viewer most likely has another key than the workers. */
export function noRunVerifies(runs: readonly RunView[]): boolean {
  return runs.length > 0 && runs.every((run) => run.problemCode === "CHECKPOINT_STORE_CORRUPT");
}
