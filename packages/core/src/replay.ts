import { canonicalJson, type JsonValue } from "./canonical.js";
import type { CallRecord } from "./call-log.js";
import { RecoveryNeedsDecision, type InDoubtReason } from "./errors.js";
import type { ToolRegistry } from "./tools.js";

/** A call of the cut-short round whose result is in the log. */
export interface FinishedCall {
  readonly callId: string;
  readonly tool: string;
  /** Canonical JSON of the arguments it ran with. */
  readonly argsText: string;
  readonly result: JsonValue;
}

/** A call that may or may not have run. */
export interface InDoubtCall {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
  readonly why: InDoubtReason;
}

/** A call waiting on an approval of a paused run. */
export interface PendingCall {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
}

/** Every call of one round, by what recovery does with it. */
export interface Classification {
  readonly finished: ReadonlyMap<string, FinishedCall>;
  readonly inDoubt: ReadonlyMap<string, InDoubtCall>;
  readonly pending: ReadonlyMap<string, PendingCall>;
}

/** What the executor does with the calls of the round it reruns. */
export interface ReplayPlan extends Classification {
  readonly round: number;
}

/** The plan of a round with nothing in its log: every call runs. */
export function freshPlan(round: number): ReplayPlan {
  return { round, finished: new Map(), inDoubt: new Map(), pending: new Map() };
}

/**
 * Classifies the calls of one round from the log, across every segment: the
 * last record of a call decides (a loop's `model` records are not calls). `done` replays; `started` with no result,
 * `unrecordable`, and `pending` on a synchronous approval port are in doubt;
 * `pending` on an approval of a paused run waits for its decision.
 */
export function classifyCalls(records: readonly CallRecord[], round: number): Classification {
  const last = new Map<string, CallRecord>();
  for (const record of records) {
    if (record.round !== round || record.kind === "model") continue;
    last.delete(record.callId); // keep log order by the last record of each call
    last.set(record.callId, record);
  }
  const finished = new Map<string, FinishedCall>();
  const inDoubt = new Map<string, InDoubtCall>();
  const pending = new Map<string, PendingCall>();
  for (const [callId, record] of last) {
    const { tool, args } = record;
    switch (record.kind) {
      case "done":
        finished.set(callId, { callId, tool, argsText: canonicalJson(args), result: record.result ?? null });
        break;
      case "started":
        inDoubt.set(callId, { callId, tool, args, why: "started with no result" });
        break;
      case "unrecordable":
        inDoubt.set(callId, { callId, tool, args, why: "result could not be recorded" });
        break;
      case "pending":
        if (record.port === true) inDoubt.set(callId, { callId, tool, args, why: "was waiting on an approval port" });
        else pending.set(callId, { callId, tool, args });
        break;
    }
  }
  return { finished, inDoubt, pending };
}

/**
 * Plans the rerun of a cut-short round. In-doubt calls of idempotent tools may
 * run again; any other in-doubt call makes `RecoveryNeedsDecision`, raised
 * before any call runs, unless `rerunInDoubt` is set.
 */
export function planReplay(
  runId: string,
  records: readonly CallRecord[],
  round: number,
  registry: ToolRegistry,
  options: { readonly rerunInDoubt?: boolean } = {},
): ReplayPlan {
  const classified = classifyCalls(records, round);
  if (options.rerunInDoubt !== true) {
    const blocking = [...classified.inDoubt.values()].filter(
      (call) => !(registry.has(call.tool) && registry.get(call.tool).idempotent),
    );
    if (blocking.length > 0) throw new RecoveryNeedsDecision(runId, blocking.map((call) => [call.tool, call.why] as const));
  }
  return { round, ...classified };
}
