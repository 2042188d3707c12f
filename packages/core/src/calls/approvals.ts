import { canonicalJson } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import { InvalidInput } from "../base/errors.js";
import type { Identity } from "../base/identity.js";
import { checkOptions, describeType, isObject, type OptionTable } from "../base/option-checks.js";

/** The answer to a call waiting for approval: approved or denied, with a reason for the record. */
export interface ApprovalAnswer {
  readonly approved: boolean;
  readonly reason?: string;
}

const ANSWER_FIELDS: OptionTable<ApprovalAnswer> = { approved: "boolean", reason: "string" };

/** An answer bound to the call and the arguments it was asked for. */
export interface BoundAnswer extends ApprovalAnswer {
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
export type ApprovalPort = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** Answers to the pending approvals of a paused run, by call id: `true`/`false`, or `{ approved, reason }`. */
export type ApprovalAnswers = Readonly<Record<string, boolean | ApprovalAnswer>>;

/**
 * Binds each answer to its pending call and the arguments it was asked for,
 * so it is spent on that call only. An answer for a call that is not pending
 * is `InvalidInput`; pending calls with no answer stay pending.
 */
export function bindAnswers(
  runId: string,
  pending: ReadonlyArray<{ readonly callId: string; readonly args: JsonValue }>,
  answers: ApprovalAnswers,
): BoundAnswer[] {
  checkAnswers(answers);
  const known = new Set(pending.map((p) => p.callId));
  for (const callId of Object.keys(answers)) {
    if (!known.has(callId))
      throw new InvalidInput(`Run ${JSON.stringify(runId)} has no pending approval ${JSON.stringify(callId)}.`);
  }
  return pending.flatMap((p) => {
    const given: unknown = answers[p.callId];
    if (given === undefined) return [];
    const { approved, reason } = readAnswer(given, `answers[${JSON.stringify(p.callId)}]`);
    return [
      { callId: p.callId, argsText: canonicalJson(p.args), approved, ...(reason === undefined ? {} : { reason }) },
    ];
  });
}

/** Checks answers to approvals: an object mapping call ids to `true`/`false` or `{ approved: boolean, reason?: string }`. */
function checkAnswers(answers: unknown): void {
  if (!isObject(answers))
    throw new InvalidInput(`answers must be an object of call id to answer, not ${describeType(answers)}.`);
  for (const [callId, answer] of Object.entries(answers)) readAnswer(answer, `answers[${JSON.stringify(callId)}]`);
}

/**
 * An answer as given: `true`/`false`, or `{ approved: boolean, reason?: string }`.
 * Anything else (`"false"`, `"no"`, `1`, a missing `approved`) is `InvalidInput`
 * naming `where`: only a real `true` approves.
 */
export function readAnswer(answer: unknown, where: string): ApprovalAnswer {
  if (typeof answer === "boolean") return { approved: answer };
  if (!isObject(answer))
    throw new InvalidInput(`${where} must be true, false or { approved, reason }, not ${describeType(answer)}.`);
  checkOptions(where, answer, ANSWER_FIELDS);
  if (answer["approved"] === undefined) throw new InvalidInput(`${where}: approved must be true or false.`);
  const { approved, reason } = answer as { approved: boolean; reason?: string };
  return reason === undefined ? { approved } : { approved, reason };
}
