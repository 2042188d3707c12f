import { canonicalJson } from "../base/canonical.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { PatchRemoved } from "../base/code-errors.js";
import { assertStorableText } from "../base/names.js";
import { describeType } from "../base/option-checks.js";
import { callSite } from "./call-id.js";
import type { CallScope } from "./call-scope.js";
import type { ReplayPlan } from "./replay.js";
import { CHILD_TOOL, EVENT_TOOL, PATCH_TOOL } from "./tools.js";

/** The longest patch id, in UTF-16 code units. */
const MAX_PATCH_ID = 200;

/** What each round's parts asked of their patches, call id → answer: a part that asks one again gets the same. */
const askedIn = new WeakMap<CallScope, Map<string, Promise<boolean>>>();

/** A patch its part of the round answered false, as the log holds it. */
interface OldBranch {
  readonly callId: string;
  readonly within: string;
  readonly id: string;
}

/** The patches of each plan's round answered false, known once per plan. */
const oldBranches = new WeakMap<ReplayPlan, readonly OldBranch[]>();

/**
 * Asks whether the code `within` a part of the round (a flow's node) runs past
 * patch `id` on its new branch: true for a part that reaches it on this code,
 * false for one whose earlier attempt, on the code before, already went past
 * it. The answer is recorded the first time (a `done` record of `PATCH_TOOL`,
 * never in doubt) and replays, so the part takes the same branch on every
 * worker until its round ends; asked again in the same round, it is the same.
 */
export function patched(scope: CallScope, within: string, id: string): Promise<boolean> {
  let asked = askedIn.get(scope);
  if (asked === undefined) {
    asked = new Map();
    askedIn.set(scope, asked);
  }
  let callId: string;
  try {
    callId = `${callSite(scope.init.plan.round, within, PATCH_TOOL, canonicalJson({ id: checkedId(id) }))}:0`;
  } catch (error) {
    return Promise.reject(error);
  }
  let answer = asked.get(callId);
  if (answer === undefined) {
    // Asked before anything awaits: a call issued beside it finds it asked (see `checkPatchesAsked`).
    answer = answerOf(scope, within, callId, id);
    asked.set(callId, answer);
  }
  return answer;
}

async function answerOf(scope: CallScope, within: string, callId: string, id: string): Promise<boolean> {
  const { plan, log } = scope.init;
  const finished = plan.finished.get(callId);
  if (finished !== undefined) {
    scope.claim(callId);
    const { outcome } = finished;
    if (outcome.status !== "ok" || typeof outcome.value !== "boolean")
      throw new CheckpointStoreCorrupt(scope.runId, `the answer of patch ${callId} in the call log is not a boolean.`);
    return outcome.value;
  }
  // Decided now, before anything awaits: what this part has reached so far is where it stands.
  const answer = caughtUp(scope, within);
  checkPatchesAsked(scope, within);
  await log.append({ round: plan.round, callId, tool: PATCH_TOOL, kind: "done", args: { id }, result: answer });
  return answer;
}

/**
 * True when this part of the round has reached every call an earlier attempt
 * of it recorded in the round. The log holds what the code before went
 * through: when this attempt has replayed all of it, it stands where that
 * code stopped, at the part's frontier, and nothing past this point ran on
 * old code (the new branch is safe). A recorded call it has not reached yet
 * was made past this point by the code before, which had no such branch: the
 * part must go on as that code did (the old branch) to replay what it did.
 */
function caughtUp(scope: CallScope, within: string): boolean {
  const asked = askedIn.get(scope);
  const { round, recorded } = scope.init.plan;
  for (const [callId, tool] of recorded) {
    const made = madeAt(callId, tool, round, within);
    if (made === undefined) continue;
    const reached = made.tool === PATCH_TOOL ? asked?.has(made.callId) === true : scope.named(made.callId);
    if (!reached) return false;
  }
  return true;
}

/**
 * The call a record of `round` under `callId` belongs to when it was made
 * `within` that part (its own id and tool; for a wait's deadline and a
 * child's start, the wait's or the start's), else undefined. The tool fixes
 * where `within` ends in the id, so a node named `a:b` never passes for `a`.
 */
function madeAt(
  callId: string,
  tool: string,
  round: number,
  within: string,
): { readonly callId: string; readonly tool: string } | undefined {
  let made = { callId, tool };
  if (callId.endsWith(":deadline")) made = { callId: callId.slice(0, -":deadline".length), tool: EVENT_TOOL };
  else if (callId.endsWith(":start")) made = { callId: callId.slice(0, -":start".length), tool: CHILD_TOOL };
  const prefix = `${round}:${within}:${made.tool}:`;
  // The rest is the digest (22 base64url characters) and the occurrence.
  return made.callId.startsWith(prefix) && /^[\w-]{22}:\d+$/.test(made.callId.slice(prefix.length)) ? made : undefined;
}

/**
 * Throws `PatchRemoved` when the part `within` the round holds a patch it
 * answered false that its code has not asked: called before the part makes a
 * call that is not replayed (and when it ends). Code that still has the old
 * branch asks the patch before it gets past it, since the log holds its calls
 * after it; code that goes past it without asking lost that branch, and would
 * do on new code what old code left half done.
 */
export function checkPatchesAsked(scope: CallScope, within: string): void {
  const asked = askedIn.get(scope);
  for (const branch of oldBranchesOf(scope.init.plan)) {
    if (branch.within === within && asked?.has(branch.callId) !== true)
      throw new PatchRemoved(scope.runId, branch.id, within);
  }
}

/** The patches of the plan's round answered false: the parts that took an old branch. */
function oldBranchesOf(plan: ReplayPlan): readonly OldBranch[] {
  const known = oldBranches.get(plan);
  if (known !== undefined) return known;
  const found: OldBranch[] = [];
  for (const call of plan.finished.values()) {
    if (call.tool !== PATCH_TOOL || call.outcome.status !== "ok" || call.outcome.value !== false) continue;
    const id = (JSON.parse(call.argsText) as { id?: unknown }).id;
    const within = typeof id === "string" ? withinOf(call.callId, plan.round, id) : undefined;
    if (typeof id === "string" && within !== undefined) found.push({ callId: call.callId, within, id });
  }
  oldBranches.set(plan, found);
  return found;
}

/** The part of the round a patch's record `callId` was asked within, checked against the id it was made from. */
function withinOf(callId: string, round: number, id: string): string | undefined {
  const head = `${round}:`;
  const tail = `:${PATCH_TOOL}:`;
  const end = callId.lastIndexOf(tail);
  if (!callId.startsWith(head) || end < head.length) return undefined;
  const within = callId.slice(head.length, end);
  return `${callSite(round, within, PATCH_TOOL, canonicalJson({ id }))}:0` === callId ? within : undefined;
}

/** A patch id: 1 to 200 characters of storable text, else `InvalidInput`. */
function checkedId(id: unknown): string {
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_PATCH_ID)
    throw new InvalidInput(
      `patched: a patch id is a string of 1 to ${MAX_PATCH_ID} characters, not ${typeof id === "string" ? `one of ${id.length}` : describeType(id)}.`,
    );
  return assertStorableText(id, `patched: the patch id ${JSON.stringify(id)}`);
}
