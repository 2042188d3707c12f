import { canonicalJson } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import { attemptCall } from "./attempts.js";
import { decodeValue, encodeValue } from "../base/codec.js";
import { CheckpointStoreCorrupt, InvalidInput, InvalidToolArgs } from "../base/errors.js";
import type { CallRef } from "../log/events.js";
import type { FinishedOutcome } from "./replay.js";
import { checkOptions, describeType, isObject, type OptionTable } from "../base/option-checks.js";
import { readAnswer, type ApprovalAnswer, type ApprovalPort } from "./approvals.js";
import type { CallOutcome, CallScope } from "./call-scope.js";
import { MAX_SLEEP_MS, RESERVED_EVENTS, SLEEP_TOOL, type ToolDefinition, type ToolRegistry } from "./tools.js";
import { type EventWait, type WaitOptions, waitForEvent } from "./event-wait.js";
import { awaitChild, type ChildEnd, type ChildStart, startChild } from "./child-runs.js";
import { checkPatchesAsked, patched } from "./patches.js";
import { validateWith } from "../base/standard-schema.js";
import { settledCall } from "../telemetry/calls.js";

/** Options of an `Executor`. */
export interface ExecutorOptions {
  /** A callback awaited for each call of an approval tool, instead of pausing the run. */
  readonly approvals?: ApprovalPort;
}

const EXECUTOR_OPTIONS: OptionTable<ExecutorOptions> = { approvals: "function" };

/**
 * Runs tool calls through the call log. A finished call replays from the log;
 * otherwise each attempt's `started` record is stored before the tool runs,
 * then `done` with its result, or the error that ended the call (see
 * `attemptCall`). A tool's error is an outcome, recorded: replay gives it
 * back without running the tool again; the runner decides what it means (a
 * flow fails with `ToolFailed`, a tool loop tells the model).
 */
export class Executor {
  readonly registry: ToolRegistry;
  readonly #approvals: ApprovalPort | undefined;

  constructor(registry: ToolRegistry, options: ExecutorOptions = {}) {
    checkExecutorArgs(registry, options);
    this.registry = registry;
    this.#approvals = options.approvals;
  }

  /**
   * Makes one call `within` a part of the round (see `CallScope.nameCall`).
   * Arguments that are not plain JSON are `InvalidInput` before anything is
   * written. The tool and the caller see the arguments and the result as the
   * log keeps them (canonical JSON, decoded), on the first run as on replay.
   */
  call(scope: CallScope, within: string, tool: string, args: unknown): Promise<CallOutcome> {
    const outcome = this.#call(scope, within, tool, args);
    scope.track(outcome);
    return outcome;
  }

  async #call(scope: CallScope, within: string, tool: string, given: unknown): Promise<CallOutcome> {
    const definition = this.registry.get(tool);
    const args = await checkedArgs(definition, given);
    const argsText = canonicalJson(args, `the arguments of ${tool}`);
    const jsonArgs = JSON.parse(argsText) as JsonValue;
    const callId = scope.nameCall(within, tool, argsText);
    const ref: CallRef = { callId, tool };
    const { plan } = scope.init;

    const finished = plan.finished.get(callId);
    if (finished !== undefined) {
      scope.claim(callId);
      settledCall(scope.runId, ref, "replayed");
      return decoded(scope, tool, finished.outcome);
    }

    checkPatchesAsked(scope, within);
    const next = plan.next.get(callId);
    // A call that started was approved already: its next attempt needs no new answer.
    if (definition.approval && next === undefined) {
      const answer = await this.#answer(scope, ref, jsonArgs, argsText);
      if (answer === undefined) return { status: "pending" };
      if (!answer.approved) {
        const reason = answer.reason === undefined ? {} : { reason: answer.reason };
        // The denial is the call's outcome, durable before the caller sees it: a recovery replays it, and never
        // takes the call for one in doubt (a `pending` on the port, with nothing after it).
        await scope.init.log.append({ round: plan.round, ...ref, kind: "denied", args: jsonArgs, ...reason });
        settledCall(scope.runId, ref, "denied");
        return { status: "denied", ...reason };
      }
    }

    return decoded(scope, tool, await attemptCall({ scope, ref, definition, args: jsonArgs, next }));
  }

  /**
   * Sleeps `within` a part of the round, for `ms` or until `until` (ms since
   * the epoch): the wake time is recorded once, as the result of a call of
   * `SLEEP_TOOL` (no side effect, so never in doubt), and replays. Gives the
   * wake time, and whether it has passed by this worker's clock; when it has
   * not, the scope notes it (the round stops, and the run is saved asleep
   * until its earliest).
   */
  sleep(
    scope: CallScope,
    within: string,
    wake: { readonly ms: number } | { readonly until: number | Date },
  ): Promise<{ readonly until: number; readonly passed: boolean }> {
    const slept = this.#sleep(scope, within, checkedWake(wake));
    scope.track(slept);
    return slept;
  }

  async #sleep(
    scope: CallScope,
    within: string,
    args: { ms: number } | { until: number },
  ): Promise<{ until: number; passed: boolean }> {
    const callId = scope.nameCall(within, SLEEP_TOOL, canonicalJson(args));
    const { plan } = scope.init;
    const finished = plan.finished.get(callId);
    let until: number;
    let woken = false;
    if (finished === undefined) {
      checkPatchesAsked(scope, within);
      until = "until" in args ? args.until : Date.now() + args.ms;
      await scope.init.log.append({ round: plan.round, callId, tool: SLEEP_TOOL, kind: "done", args, result: until });
    } else {
      scope.claim(callId);
      const { outcome } = finished;
      if (outcome.status !== "ok" || !Number.isSafeInteger(outcome.value))
        throw new CheckpointStoreCorrupt(scope.runId, `the wake time of ${callId} in the call log is not a time.`);
      until = outcome.value as number;
      woken = scope.woken(finished.at);
    }
    if (woken || until <= Date.now()) return { until, passed: true };
    scope.sleepUntil(until);
    return { until, passed: false };
  }

  /**
   * Asks patch `id` `within` a part of the round (see `patched` in
   * patches.ts): true when the part reaches it on this code, false when an
   * earlier attempt of it went past it on the code before; recorded once.
   */
  patched(scope: CallScope, within: string, id: string): Promise<boolean> {
    const answer = patched(scope, within, id);
    scope.track(answer);
    return answer;
  }

  /**
   * Waits `within` a part of the round for the next event named `name`, at
   * most `timeoutMs` (see `waitForEvent` in event-wait.ts): gives the event
   * or the timeout, replayed once recorded; undefined while the round must
   * wait (the scope notes it: the run is saved waiting, and runs the round
   * again when an event comes or the timeout passes).
   */
  waitForEvent(scope: CallScope, within: string, name: string, options?: WaitOptions): Promise<EventWait | undefined> {
    // The library's own events (a child run's end) are waited for by the library only.
    const waited =
      typeof name === "string" && name.startsWith(RESERVED_EVENTS)
        ? Promise.reject(
            new InvalidInput(`waitForEvent: event names starting with ${RESERVED_EVENTS} are the library's own.`),
          )
        : waitForEvent(scope, within, name, options);
    scope.track(waited);
    return waited;
  }

  /**
   * Starts a child run `within` a part of the round, once however often the
   * round runs again (see `startChild` in child-runs.ts): gives its run id.
   */
  startChild(scope: CallScope, within: string, child: ChildStart): Promise<string> {
    const started = startChild(scope, within, child);
    scope.track(started);
    return started;
  }

  /** Waits for the end of child run `runId` (see `awaitChild`): how it ended, or undefined while the round must wait. */
  awaitChild(
    scope: CallScope,
    within: string,
    runId: string,
    retell?: (runId: string) => Promise<boolean>,
  ): Promise<ChildEnd | undefined> {
    const ended = awaitChild(scope, within, runId, retell);
    scope.track(ended);
    return ended;
  }

  /** The answer for an approval call, or undefined when the run must pause for one. */
  async #answer(
    scope: CallScope,
    ref: CallRef,
    args: JsonValue,
    argsText: string,
  ): Promise<ApprovalAnswer | undefined> {
    const stored = scope.init.answers?.get(ref.callId);
    if (stored !== undefined && stored.argsText === argsText) return stored;
    const entry = { round: scope.init.plan.round, callId: ref.callId, tool: ref.tool, kind: "pending", args } as const;
    if (this.#approvals === undefined) {
      await scope.init.log.append(entry);
      scope.pending.push({ callId: ref.callId, tool: ref.tool, args });
      return undefined;
    }
    await scope.init.log.append({ ...entry, port: true });
    const request = { runId: scope.runId, callId: ref.callId, tool: ref.tool, args, identity: scope.init.identity };
    return readAnswer(await this.#approvals(request), `the approval port's answer for ${ref.tool}`);
  }
}

/**
 * A call's outcome with its result as the run's codec decodes the stored
 * form: the same on the first run as on replay. A result decided without
 * the codec is plain JSON, encoded first as the tool's own result would be.
 */
function decoded(scope: CallScope, tool: string, outcome: FinishedOutcome): CallOutcome {
  if (outcome.status !== "ok") return outcome;
  const stored =
    outcome.plain === true ? encodeValue(scope.codec, outcome.value, `the decided result of ${tool}`) : outcome.value;
  return { status: "ok", value: decodeValue(scope.codec, stored, `the stored result of ${tool}`) };
}

/** A call's arguments as its tool's `args` schema outputs them (as given without one): `InvalidToolArgs` when they fail it. */
async function checkedArgs(definition: ToolDefinition, given: unknown): Promise<unknown> {
  if (definition.args === undefined) return given;
  const result = await validateWith(definition.args, given);
  if ("problems" in result) throw new InvalidToolArgs(definition.name, result.problems);
  return result.value;
}

/** A sleep's length or wake time, checked: `InvalidInput` for anything but a whole number of ms ≥ 0 (a time: a `Date` or ms since the epoch). */
function checkedWake(wake: unknown): { ms: number } | { until: number } {
  if (isObject(wake) && "ms" in wake) {
    const { ms } = wake;
    if (typeof ms === "number" && Number.isSafeInteger(ms) && ms >= 0 && ms <= MAX_SLEEP_MS) return { ms };
    throw new InvalidInput(`sleep: ms must be a whole number of ms from 0 to ${MAX_SLEEP_MS}, not ${String(ms)}.`);
  }
  const until = isObject(wake) ? wake["until"] : undefined;
  const time = until instanceof Date ? until.getTime() : until;
  if (typeof time === "number" && Number.isSafeInteger(time) && time >= 0 && time <= Date.now() + MAX_SLEEP_MS)
    return { until: time };
  throw new InvalidInput(
    `sleepUntil takes a Date or a time in ms since the epoch, at most ${MAX_SLEEP_MS} ms from now, not ${until instanceof Date ? until.toISOString() : describeType(until)}.`,
  );
}

/** Checks that a runner is given an `Executor` (an object with `call` and a `registry`). */
export function checkExecutor(where: string, executor: unknown): void {
  if (!(isObject(executor) && typeof executor["call"] === "function" && isObject(executor["registry"]))) {
    throw new InvalidInput(`${where} takes an Executor (new Executor(registry)), not ${describeType(executor)}.`);
  }
}

/** Checks that `registry` is a `ToolRegistry` (an object with `get`, `has` and `list`). */
export function checkRegistry(where: string, registry: unknown): void {
  const isRegistry =
    isObject(registry) && ["get", "has", "list"].every((method) => typeof registry[method] === "function");
  if (!isRegistry)
    throw new InvalidInput(
      `${where} takes a ToolRegistry (new ToolRegistry().tool(…)), not ${describeType(registry)}.`,
    );
}

/** Checks what an `Executor` is built from: a `ToolRegistry` and an approval port that is a function. */
function checkExecutorArgs(registry: unknown, options: unknown): void {
  checkRegistry("Executor", registry);
  checkOptions("Executor", options, EXECUTOR_OPTIONS);
}
