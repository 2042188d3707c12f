import { canonicalJson } from "../base/canonical.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { isCount, isJsonObject, isString, type JsonValue } from "../base/json.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { assertEventName, type InboxEvent } from "../log/inbox.js";
import type { CallScope } from "./call-scope.js";
import { checkPatchesAsked } from "./patches.js";
import type { FinishedOutcome, ReplayPlan } from "./replay.js";
import { EVENT_TOOL, MAX_SLEEP_MS, SLEEP_TOOL } from "./tools.js";

/** What a wait for an event gives: the event it took, or that its timeout passed first. */
export type EventWait =
  | {
      readonly status: "received";
      readonly name: string;
      /** What the sender sent (plain JSON). */
      readonly payload: JsonValue;
      /** The sender's idempotency key. */
      readonly key: string;
    }
  | { readonly status: "timeout"; readonly name: string };

/** Options of a wait for an event. */
export interface WaitOptions {
  /** How long to wait, in ms (a whole number ≥ 0): the wait then gives `{ status: "timeout" }`. Default: no end. */
  readonly timeoutMs?: number;
}

const WAIT_OPTIONS: OptionTable<WaitOptions> = { timeoutMs: true };

/** The events each round's waits took, seq → name: known once per plan, then kept as the round takes more. */
const roundTakes = new WeakMap<ReplayPlan, Map<number, string>>();

/**
 * The events the round of `plan` took, by seq: those of its finished waits
 * in the log (also of waits the code has not reached again yet), then each
 * new one. A wait never takes one of these.
 */
function takenInRound(plan: ReplayPlan): Map<number, string> {
  let takes = roundTakes.get(plan);
  if (takes === undefined) {
    takes = new Map();
    for (const call of plan.finished.values()) {
      if (call.tool !== EVENT_TOOL || call.outcome.status !== "ok") continue;
      const taken = call.outcome.value;
      const name = JSON.parse(call.argsText)?.name;
      if (isJsonObject(taken) && isCount(taken["seq"]) && isString(name)) takes.set(taken["seq"], name);
    }
    roundTakes.set(plan, takes);
  }
  return takes;
}

/** How many events of each name the runs' rounds so far took: `before` with the takes of the round of `plan` added. */
export function takenAfterRound(
  before: Readonly<Record<string, number>> | undefined,
  plan: ReplayPlan,
): Record<string, number> | undefined {
  const takes = takenInRound(plan);
  if (takes.size === 0) return before;
  // Counted in a map: an event may be named `__proto__`, which an assignment to a plain object would not keep.
  const taken = new Map(Object.entries(before ?? {}));
  for (const name of takes.values()) taken.set(name, (taken.get(name) ?? 0) + 1);
  return Object.fromEntries(taken);
}

/**
 * Waits `within` a part of the round for the next event named `name` (see
 * docs/protocol.md, "Events"). A wait that finished replays from its `done`
 * record. Otherwise its deadline is recorded once (a `SLEEP_TOOL` record
 * under the wait's id + `:deadline`); the run's inbox is read, and the
 * earliest event of that name that no wait took is taken, recorded as the
 * wait's `done` (so it is taken once, however often the round runs again).
 * With none there, a passed deadline records the timeout; else the scope
 * notes the wait (the round stops, and the run is saved waiting) and this
 * gives undefined. `whenNone`, when the inbox holds none, may deliver one
 * (true when it may have): the inbox is read again.
 */
export async function waitForEvent(
  scope: CallScope,
  within: string,
  name: string,
  options: WaitOptions = {},
  whenNone?: () => Promise<boolean>,
): Promise<EventWait | undefined> {
  const args = checkedWait(name, options);
  const callId = scope.nameCall(within, EVENT_TOOL, canonicalJson(args));
  const deadlineId = `${callId}:deadline`;
  const { plan, log } = scope.init;
  scope.claim(deadlineId);
  const finished = plan.finished.get(callId);
  if (finished !== undefined) {
    scope.claim(callId);
    return replayed(scope.runId, callId, name, finished.outcome);
  }
  checkPatchesAsked(scope, within);
  let deadline: number | undefined;
  let woken = false;
  if (args.timeoutMs !== undefined) {
    const recorded = plan.finished.get(deadlineId);
    woken = scope.woken(recorded?.at);
    const fixed = recorded?.outcome;
    if (fixed === undefined) {
      deadline = Date.now() + args.timeoutMs;
      const entry = { round: plan.round, callId: deadlineId, tool: SLEEP_TOOL, kind: "done" } as const;
      await log.append({ ...entry, args: { ms: args.timeoutMs }, result: deadline });
    } else if (fixed.status === "ok" && Number.isSafeInteger(fixed.value)) deadline = fixed.value as number;
    else throw new CheckpointStoreCorrupt(scope.runId, `the deadline of ${callId} in the call log is not a time.`);
  }

  const takes = takenInRound(plan);
  let inbox = await scope.inbox();
  let event = earliestUntaken(scope, name, inbox, takes);
  // Found none: `whenNone` may deliver one (a child's end told again), then the inbox is read again.
  if (event === undefined && whenNone !== undefined && (await whenNone())) {
    inbox = await scope.inbox(true);
    event = earliestUntaken(scope, name, inbox, takes);
  }
  const passed = deadline !== undefined && (woken || deadline <= Date.now());
  // The step's inbox may have been read before this wait looked (by an earlier wait of the step): an event sent
  // since wins over a deadline that passed, so the inbox is read again before the wait times out.
  if (event === undefined && passed) {
    inbox = await scope.inbox(true);
    event = earliestUntaken(scope, name, inbox, takes);
  }
  const entry = { round: plan.round, callId, tool: EVENT_TOOL, kind: "done", args } as const;
  if (event !== undefined) {
    // Marked taken with no await since it was found: a sibling wait of the round never takes the same event.
    takes.set(event.seq, name);
    const { seq, key, payload } = event;
    await log.append({ ...entry, result: { seq, key, payload } });
    return { status: "received", name, payload, key };
  }
  if (passed) {
    await log.append({ ...entry, result: { timeout: true } });
    return { status: "timeout", name };
  }
  scope.waitForEvent(name, inbox.length, deadline ?? Date.now() + MAX_SLEEP_MS);
  return undefined;
}

/**
 * The earliest event named `name` in `inbox` that no wait took: past the
 * first `taken[name]` (the run's earlier rounds), and not one of `takes`
 * (this round's). `CheckpointStoreCorrupt` when the inbox holds fewer of that
 * name than the run took.
 */
function earliestUntaken(
  scope: CallScope,
  name: string,
  inbox: readonly InboxEvent[],
  takes: ReadonlyMap<number, string>,
): InboxEvent | undefined {
  const named = inbox.filter((event) => event.name === name);
  const before = Object.hasOwn(scope.init.taken ?? {}, name) ? (scope.init.taken?.[name] ?? 0) : 0;
  if (named.length < before)
    throw new CheckpointStoreCorrupt(
      scope.runId,
      `its inbox holds ${named.length} events named ${JSON.stringify(name)}, and the run took ${before}: events were deleted.`,
    );
  return named.slice(before).find((candidate) => !takes.has(candidate.seq));
}

/** A finished wait's outcome as its `done` record holds it. */
function replayed(runId: string, callId: string, name: string, outcome: FinishedOutcome): EventWait {
  const value = outcome.status === "ok" ? outcome.value : undefined;
  if (isJsonObject(value) && value["timeout"] === true) return { status: "timeout", name };
  if (isJsonObject(value) && isString(value["key"]) && value["payload"] !== undefined)
    return { status: "received", name, payload: value["payload"], key: value["key"] };
  throw new CheckpointStoreCorrupt(
    runId,
    `the outcome of wait ${callId} in the call log is not an event or a timeout.`,
  );
}

/** A wait's name and options, checked: `InvalidInput` for a bad name or a timeout that is not a whole number of ms. */
function checkedWait(name: string, options: WaitOptions): { name: string; timeoutMs?: number } {
  assertEventName("waitForEvent", name);
  checkOptions("waitForEvent", options, WAIT_OPTIONS);
  const { timeoutMs } = options;
  if (timeoutMs === undefined) return { name };
  if (!(Number.isSafeInteger(timeoutMs) && timeoutMs >= 0 && timeoutMs <= MAX_SLEEP_MS))
    throw new InvalidInput(
      `waitForEvent: timeoutMs must be a whole number of ms from 0 to ${MAX_SLEEP_MS}, not ${String(timeoutMs)}.`,
    );
  return { name, timeoutMs };
}
