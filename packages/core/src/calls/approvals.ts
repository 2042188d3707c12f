import { canonicalJson } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import { InvalidInput } from "../base/errors.js";
import type { Identity } from "../base/identity.js";
import { checkOptionTypes, describeType, isObject } from "../base/option-checks.js";

/** A decision on an approval. */
export interface ApprovalDecision {
  readonly approved: boolean;
  readonly reason?: string;
}

/** A decision bound to the call and the arguments it was given for. */
export interface BoundDecision extends ApprovalDecision {
  readonly callId: string;
  readonly argsText: string;
}

/** What a synchronous approval port is asked. */
export interface ApprovalRequest {
  readonly runId: string;
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
  readonly identity: Identity;
}

/** A callback awaited in process for each call of an approval tool, instead of pausing the run. */
export type ApprovalPort = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

/** Decisions on the pending approvals of a paused run, by call id: `true`/`false`, or `{ approved, reason }`. */
export type Decisions = Readonly<Record<string, boolean | ApprovalDecision>>;

/**
 * Binds each decision to its pending call and the arguments it was asked for,
 * so it is spent on that call only. A decision for a call that is not pending
 * is `InvalidInput`; pending calls with no decision stay pending.
 */
export function bindDecisions(
  runId: string,
  pending: ReadonlyArray<{ readonly callId: string; readonly args: JsonValue }>,
  decisions: Decisions,
): BoundDecision[] {
  checkDecisions(decisions);
  const known = new Set(pending.map((p) => p.callId));
  for (const callId of Object.keys(decisions)) {
    if (!known.has(callId))
      throw new InvalidInput(`Run ${JSON.stringify(runId)} has no pending approval ${JSON.stringify(callId)}.`);
  }
  return pending.flatMap((p) => {
    const given: unknown = decisions[p.callId];
    if (given === undefined) return [];
    const { approved, reason } = readDecision(given, `decisions[${JSON.stringify(p.callId)}]`);
    return [
      { callId: p.callId, argsText: canonicalJson(p.args), approved, ...(reason === undefined ? {} : { reason }) },
    ];
  });
}

/**
 * Checks decisions on approvals: an object mapping call ids to `true`/`false`
 * or `{ approved: boolean, reason?: string }`.
 */
function checkDecisions(decisions: unknown): void {
  if (!isObject(decisions))
    throw new InvalidInput(`decisions must be an object of call id to decision, not ${describeType(decisions)}.`);
  for (const [callId, decision] of Object.entries(decisions))
    readDecision(decision, `decisions[${JSON.stringify(callId)}]`);
}

/**
 * A decision as given: `true`/`false`, or `{ approved: boolean, reason?: string }`.
 * Anything else (`"false"`, `"no"`, `1`, a missing `approved`) is `InvalidInput`
 * naming `where`: only a real `true` approves.
 */
export function readDecision(
  decision: unknown,
  where: string,
): { readonly approved: boolean; readonly reason?: string } {
  if (typeof decision === "boolean") return { approved: decision };
  if (!isObject(decision))
    throw new InvalidInput(`${where} must be true, false or { approved, reason }, not ${describeType(decision)}.`);
  checkOptionTypes(where, decision, { approved: "boolean", reason: "string" });
  if (decision["approved"] === undefined) throw new InvalidInput(`${where}: approved must be true or false.`);
  const { approved, reason } = decision as { approved: boolean; reason?: string };
  return reason === undefined ? { approved } : { approved, reason };
}
