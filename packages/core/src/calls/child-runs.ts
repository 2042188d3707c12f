import { createHash } from "node:crypto";
import { canonicalJson } from "../base/canonical.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { isJsonObject, isString, type JsonValue } from "../base/json.js";
import { MAX_RUN_ID_LENGTH } from "../base/names.js";
import type { CallScope } from "./call-scope.js";
import { waitForEvent } from "./event-wait.js";
import { checkPatchesAsked } from "./patches.js";
import type { ReplayPlan } from "./replay.js";
import { CHILD_TOOL, RESERVED_EVENTS } from "./tools.js";

/** A child run's parent: its run id, and the name of the event that tells it the child ended. */
export interface ParentRef {
  readonly runId: string;
  readonly event: string;
}

/** How a child run ended, as its parent's wait receives it. */
export type ChildEnd =
  | { readonly status: "done"; readonly output: JsonValue }
  | { readonly status: "failed"; readonly error: string };

/** The event a child run's end is sent to its parent as: one name per child, so a wait takes only its own child's. */
function childEndEvent(childRunId: string): string {
  return `${RESERVED_EVENTS}child:${createHash("sha256").update(childRunId).digest("base64url")}`;
}

/** A child run to start: what names it (its flow's name and its input, as stored), and how its step 0 is saved. */
export interface ChildStart {
  readonly name: string;
  readonly input: JsonValue;
  /** Its run id (default: derived from the parent's run id and the start's call identity). */
  readonly runId?: string | undefined;
  /** Not cancelled with its parent, and not waited for: its end is sent nowhere. */
  readonly detached?: boolean | undefined;
  /**
   * Saves the child's step 0 and leaves it to the fleet, with `parent` when
   * the parent waits for it; a run id already taken by this child (a start
   * whose record did not land) is no error, by another run `CheckpointConflict`.
   */
  readonly enqueue: (runId: string, parent: ParentRef | undefined) => Promise<void>;
  /**
   * Tells the parent again how child run `runId` ended, when it ended (its
   * first telling may have been refused: its parent had failed and was
   * retried since, or was not stored yet); true when it ended. A duplicate
   * when the first telling landed.
   */
  readonly retell?: ((runId: string) => Promise<boolean>) | undefined;
}

/**
 * Starts a child run `within` a part of the round, once however often the
 * round runs again: the start is recorded as the `done` record of a
 * `CHILD_TOOL` call under its id + `:start`, holding the child's run id, after
 * step 0 of the child was saved. Gives the child's run id.
 */
export async function startChild(scope: CallScope, within: string, child: ChildStart): Promise<string> {
  const args = {
    name: child.name,
    input: child.input,
    ...(child.runId === undefined ? {} : { runId: child.runId }),
    ...(child.detached === true ? { detached: true } : {}),
  };
  const callId = scope.nameCall(within, CHILD_TOOL, canonicalJson(args, "a child run's input"));
  const startId = `${callId}:start`;
  const runId = child.runId ?? childRunId(scope.runId, callId);
  const { plan, log } = scope.init;
  scope.claim(startId);
  // One child run per start: a run id another start of this run took (this round's, or a child whose end an
  // earlier round took) would make two waits for one end, and the second would never get one.
  const starts = startsInRound(plan);
  const other = starts.get(runId);
  const endTaken = child.detached !== true && Object.hasOwn(scope.init.taken ?? {}, childEndEvent(runId));
  if ((other !== undefined && other !== startId) || (other === undefined && endTaken))
    throw new InvalidInput(
      `startChild: child run id ${JSON.stringify(runId)} was given to another start of run ${JSON.stringify(scope.runId)}: give each child run its own runId.`,
    );
  starts.set(runId, startId);
  const started = plan.finished.get(startId)?.outcome;
  if (started !== undefined) {
    const value = started.status === "ok" ? started.value : undefined;
    if (isJsonObject(value) && value["runId"] === runId) return runId;
    throw new CheckpointStoreCorrupt(
      scope.runId,
      `the start of child run ${JSON.stringify(runId)} is recorded as another run.`,
    );
  }
  checkPatchesAsked(scope, within);
  const parent = child.detached === true ? undefined : { runId: scope.runId, event: childEndEvent(runId) };
  // The parent is stored before its child (its step 0 and running steps land lazily): a child that ends at once
  // finds its parent there to tell, and a parent that dies here leaves no child of a run that never was.
  await log.flush();
  await child.enqueue(runId, parent);
  await log.append({ round: plan.round, callId: startId, tool: CHILD_TOOL, kind: "done", args, result: { runId } });
  return runId;
}

/** The child run ids each round's starts took, run id → start id: known once per plan, then kept as the round starts more. */
const roundStarts = new WeakMap<ReplayPlan, Map<string, string>>();

/** The child run ids the round of `plan` started: those of its `done` start records, then each new one. */
function startsInRound(plan: ReplayPlan): Map<string, string> {
  let starts = roundStarts.get(plan);
  if (starts === undefined) {
    starts = new Map();
    for (const call of plan.finished.values()) {
      const value = call.outcome.status === "ok" ? call.outcome.value : undefined;
      if (call.tool === CHILD_TOOL && isJsonObject(value) && isString(value["runId"]))
        starts.set(value["runId"], call.callId);
    }
    roundStarts.set(plan, starts);
  }
  return starts;
}

/**
 * Waits `within` a part of the round for the end of child run `runId`: a
 * wait for its end event (`childEndEvent`), which the child sends before it
 * is saved ended, and `retell` sends again when the wait finds none. Gives
 * how it ended, or undefined while the round must wait.
 */
export async function awaitChild(
  scope: CallScope,
  within: string,
  runId: string,
  retell?: (runId: string) => Promise<boolean>,
): Promise<ChildEnd | undefined> {
  // With no end in the inbox, a child that ended is asked to tell it again: a telling its parent refused is not lost.
  const whenNone = retell === undefined ? undefined : () => retell(runId);
  const wait = await waitForEvent(scope, within, childEndEvent(runId), {}, whenNone);
  if (wait === undefined) return undefined;
  const end = wait.status === "received" ? wait.payload : undefined;
  if (isJsonObject(end) && end["status"] === "done" && end["output"] !== undefined)
    return { status: "done", output: end["output"] };
  if (isJsonObject(end) && end["status"] === "failed" && isString(end["error"]))
    return { status: "failed", error: end["error"] };
  throw new CheckpointStoreCorrupt(scope.runId, `the end of child run ${JSON.stringify(runId)} has another shape.`);
}

/**
 * A child's run id, derived from its parent's and the start's call id: the
 * same on every replay, and another for every other start. Readable as
 * `<parent run id>.<16 characters>` while that fits a run id.
 */
export function childRunId(parentRunId: string, callId: string): string {
  const digest = createHash("sha256").update(`${parentRunId}\n${callId}`).digest("base64url");
  const readable = `${parentRunId}.${digest.slice(0, 16)}`;
  return readable.length <= MAX_RUN_ID_LENGTH ? readable : `child-${digest}`;
}
