import { encodeValue, PLAIN_JSON, type ValueCodec } from "../base/codec.js";
import { InvalidInput, MAX_ERROR_TEXT } from "../base/errors.js";
import type { JsonValue } from "../base/json.js";
import { isObject } from "../base/option-checks.js";
import { type Classification, classifyCalls } from "../calls/replay.js";
import { type CallLog, type CallRecord, readCallLog } from "../log/call-log.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import type { DurableRun } from "./durable-run.js";

/**
 * An operator's decision on one call in doubt, once it was checked at the
 * tool's system (by its idempotency key): `"rerun"` (it did not happen, or
 * may happen again: run it), `{ result }` (it happened and returned this:
 * stored as the run's codec encodes it, replayed as if it had finished), `"skip"` or `{ error }` (it did not happen
 * and must not: the call fails, a recorded failure).
 */
export type InDoubtDecision = "rerun" | "skip" | { readonly result: unknown } | { readonly error: string };

/** Decisions on calls in doubt, by call id (`RecoverOptions.decide`, `decideInDoubt`). */
export type InDoubtDecisions = Readonly<Record<string, InDoubtDecision>>;

/** A decision as the call log keeps it. */
export type DecidedOutcome =
  | { readonly decision: "rerun" }
  | { readonly decision: "result"; readonly result: JsonValue; readonly plain?: true }
  | { readonly decision: "error"; readonly error: string };

/** The error a `"skip"` decision records. */
const SKIPPED = "Skipped: an operator decided the call must not run.";

/**
 * Reads `decide`, each `{ result }` as `codec` stores it (`InvalidInput` when
 * it cannot), or without a codec as plain JSON marked `plain`, which workers
 * pass through their own codec: `InvalidInput` for anything but an object of
 * call ids to decisions, before anything is written.
 */
export function readInDoubtDecisions(given: unknown, codec: ValueCodec): Map<string, DecidedOutcome> {
  if (!isObject(given)) throw new InvalidInput("decide must be an object of call ids to decisions.");
  const decided = new Map<string, DecidedOutcome>();
  for (const [callId, decision] of Object.entries(given)) {
    const where = `decide[${JSON.stringify(callId)}]`;
    if (decision === "rerun") decided.set(callId, { decision: "rerun" });
    else if (decision === "skip") decided.set(callId, { decision: "error", error: SKIPPED });
    else if (isObject(decision) && "result" in decision && Object.keys(decision).length === 1) {
      const result = encodeValue(codec, decision["result"], `${where}.result`);
      decided.set(callId, { decision: "result", result, ...(codec === PLAIN_JSON ? { plain: true } : {}) });
    } else if (isObject(decision) && typeof decision["error"] === "string" && Object.keys(decision).length === 1) {
      const error = decision["error"];
      if (error.length === 0 || error.length > MAX_ERROR_TEXT)
        throw new InvalidInput(`${where}.error must be 1 to ${MAX_ERROR_TEXT} characters.`);
      decided.set(callId, { decision: "error", error });
    } else throw new InvalidInput(`${where} must be "rerun", "skip", { result } or { error: string }.`);
  }
  return decided;
}

/**
 * Refuses decisions on calls that are not in doubt in the run's round, read
 * from the log before a claim: `InvalidInput` naming them and the calls that
 * are, with nothing written.
 */
export async function checkBeforeClaim(
  store: CheckpointStore,
  sealer: Sealer,
  latest: CheckpointBody,
  round: number,
  decided: ReadonlyMap<string, DecidedOutcome>,
): Promise<void> {
  const records = await readCallLog(store, sealer, latest.runId, latest.calls);
  checkDecidedInDoubt(latest.runId, decided, classifyCalls(records, round));
}

function checkDecidedInDoubt(runId: string, decided: ReadonlyMap<string, DecidedOutcome>, round: Classification): void {
  const notInDoubt = [...decided.keys()].filter((callId) => !round.inDoubt.has(callId));
  if (notInDoubt.length === 0) return;
  const inDoubt = [...round.inDoubt.keys()].map((id) => JSON.stringify(id)).join(", ") || "none";
  throw new InvalidInput(
    `Run ${JSON.stringify(runId)}: ${notInDoubt.map((id) => JSON.stringify(id)).join(", ")} ${notInDoubt.length === 1 ? "is" : "are"} not in doubt; the calls in doubt are: ${inDoubt}.`,
  );
}

/**
 * Records each decision on a call still in doubt as a `decided` record, with
 * who decided and when, before anything acts on it: the next plan of the
 * round reads it from the log, on this worker or any other. A call that
 * finished since (its worker recorded it before it was fenced) keeps its
 * outcome: its decision is not recorded. Returns the call ids decided.
 */
async function recordDecisions(
  log: CallLog,
  records: readonly CallRecord[],
  round: Classification & { readonly round: number },
  decided: ReadonlyMap<string, DecidedOutcome>,
  by: string,
): Promise<string[]> {
  const at = new Date().toISOString();
  const recorded: string[] = [];
  for (const [callId, outcome] of decided) {
    const call = round.inDoubt.get(callId);
    if (call === undefined) continue;
    const started = records.findLast((r) => r.callId === callId && r.kind === "started");
    await log.append({
      round: round.round,
      callId,
      tool: call.tool,
      kind: "decided",
      args: call.args,
      ...outcome,
      by,
      at,
      ...(started?.attempt === undefined ? {} : { attempt: started.attempt }),
    });
    recorded.push(callId);
  }
  return recorded;
}

/** Who a decision is recorded as made by: `by` when given (1 to 200 characters), else the worker. */
export function decidedBy(by: unknown, worker: string): string {
  if (by === undefined) return worker;
  if (typeof by !== "string" || by.length === 0 || by.length > 200)
    throw new InvalidInput("by must be a string of 1 to 200 characters: who decides.");
  return by;
}

/**
 * Records decisions right after a claim (the fenced worker can add nothing
 * more), then reads the log again: the round is planned from what the log
 * holds, decisions included. Returns the log and the call ids decided.
 */
export async function decideAtClaim(
  store: CheckpointStore,
  sealer: Sealer,
  run: DurableRun,
  records: readonly CallRecord[],
  round: number,
  decided: ReadonlyMap<string, DecidedOutcome>,
  by: string,
): Promise<{ readonly records: CallRecord[]; readonly decided: string[] }> {
  const recorded = await recordDecisions(run.log, records, { ...classifyCalls(records, round), round }, decided, by);
  return { records: await readCallLog(store, sealer, run.runId, run.log.counts), decided: recorded };
}
