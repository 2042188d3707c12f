import { canonicalCopy } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import { encodeValue } from "../base/codec.js";
import { InvalidInput, ToolTimedOut, UnrecordableResult, errorText } from "../base/errors.js";
import { emit, type CallRef } from "../log/events.js";
import type { CallScope } from "./call-scope.js";
import { faultPoint } from "../base/fault-points.js";
import { idempotencyKeyFor, withIdempotencyKey } from "./idempotency.js";
import type { FinishedOutcome, NextAttempt } from "./replay.js";
import { backoffMs, sleepUntil, worthRetrying } from "./retry.js";
import type { ToolDefinition } from "./tools.js";
import { callSpan, type CallSpan } from "../telemetry/calls.js";

/** One call the executor runs (it did not replay, and no approval stops it). */
export interface AttemptedCall {
  readonly scope: CallScope;
  readonly ref: CallRef;
  readonly definition: ToolDefinition;
  readonly args: JsonValue;
  /** Where a call the log has started goes on; undefined for a call not yet started. */
  readonly next: NextAttempt | undefined;
}

/**
 * Runs a call's attempts through the log: `started` before each, then `done`
 * with the result; `failed` (with when the next may start) when an attempt
 * throws or times out and its retry policy allows another; `error` when it
 * does not. A wait between attempts holds the run (its lease is kept) and
 * ends early only when the worker gives the run up: the call is then left
 * `failed`, and whoever claims the run waits what is left of the wait, not
 * all of it, and goes on with the next attempt.
 */
export async function attemptCall(call: AttemptedCall): Promise<FinishedOutcome> {
  const { scope, ref, definition, args } = call;
  const { log, plan, events, kind } = scope.init;
  const giveUp = scope.init.signal;
  const round = plan.round;
  const base = { round, callId: ref.callId, tool: ref.tool, args };
  let attempt = call.next?.attempt ?? 1;
  let notBefore = call.next?.notBefore;
  for (;;) {
    if (notBefore !== undefined) await sleepUntil(notBefore, giveUp);
    // A run its worker gave up may be claimed by another at once: starting a tool now would put its call in doubt.
    giveUp?.throwIfAborted();
    faultPoint("call.before-started");
    await log.append({ ...base, kind: "started", ...(attempt > 1 ? { attempt } : {}) });
    faultPoint("call.after-started");
    // Given up while its record was on its way: the call is left in doubt, its tool not run.
    giveUp?.throwIfAborted();
    await emit(events, { type: "call.started", runId: scope.runId, kind, call: ref, attempt });
    const span = callSpan(scope.runId, ref, attempt, plan.inDoubt.has(ref.callId));
    const started = performance.now();
    let returned: unknown;
    try {
      returned = await runAttempt(scope, definition, args, ref.callId, attempt, span);
    } catch (error) {
      // The worker gave the run up: the attempt is left `started`, in doubt, for whoever claims the run.
      if (giveUp?.aborted === true) throw span.end("in_doubt", error);
      // A timed-out attempt may still act: a tool that may not run twice is left in doubt, not tried again.
      if (error instanceof ToolTimedOut && !definition.idempotent)
        throw span.end("in_doubt", scope.leaveInDoubt(error));
      const text = errorText(error);
      const durationMs = Math.round(performance.now() - started);
      const failure = { runId: scope.runId, kind, call: ref, error: text, attempt, durationMs };
      if (!worthRetrying(definition.retry, error, attempt)) {
        faultPoint("call.before-done");
        await log.append({ ...base, kind: "error", error: text, attempt });
        faultPoint("call.after-done");
        span.end("error", error);
        await emit(events, { type: "call.failed", ...failure });
        return { status: "error", error: text, attempts: attempt, cause: error };
      }
      const delayMs = backoffMs(definition.retry, attempt + 1);
      notBefore = Date.now() + delayMs;
      await log.append({ ...base, kind: "failed", error: text, attempt, retryAt: notBefore });
      faultPoint("call.after-failed");
      span.end("retrying", error);
      await emit(events, { type: "call.retrying", ...failure, delayMs });
      attempt += 1;
      continue;
    }
    return recordResult(call, base, returned, Math.round(performance.now() - started), attempt, span);
  }
}

/** One attempt of the tool, with its context; rejects with `ToolTimedOut` when it outlasts `timeoutMs`. */
async function runAttempt(
  scope: CallScope,
  definition: ToolDefinition,
  args: JsonValue,
  callId: string,
  attempt: number,
  span: CallSpan,
): Promise<unknown> {
  const idempotencyKey = idempotencyKeyFor(scope.runId, callId);
  const { timeoutMs } = definition;
  const timeout = new AbortController();
  const giveUp = scope.init.signal;
  const signal = giveUp === undefined ? timeout.signal : AbortSignal.any([timeout.signal, giveUp]);
  const { stream } = scope.init;
  // Progress of this attempt only: once it settled (returned, threw, timed out), what its tool writes is dropped.
  let settled = false;
  const writeData = (data: unknown): void => {
    if (settled) return;
    const copy = canonicalCopy(data, `the data ${definition.name} writes to the stream`);
    stream?.write({ type: "data", callId, data: copy });
  };
  const ctx = { runId: scope.runId, callId, idempotencyKey, identity: scope.init.identity, attempt, signal, writeData };
  // The call's span is active while the tool runs: its own spans (an instrumented HTTP call) are the call's children.
  const running = span
    .around(() => withIdempotencyKey(idempotencyKey, async () => definition.fn(args, ctx)))
    .finally(() => {
      settled = true;
    });
  if (timeoutMs === undefined) return running;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new ToolTimedOut(definition.name, timeoutMs);
      timeout.abort(error);
      reject(error);
    }, timeoutMs);
  });
  // A tool that ignores its signal goes on running; what it returns late is dropped here, never recorded.
  running.catch(() => undefined);
  try {
    return await Promise.race([running, late]);
  } finally {
    settled = true;
    clearTimeout(timer);
  }
}

/**
 * Records what an attempt returned, as the run's codec encodes it, as the call's `done` (or `unrecordable`,
 * then throws `UnrecordableResult`).
 */
async function recordResult(
  call: AttemptedCall,
  base: { round: number; callId: string; tool: string; args: JsonValue },
  returned: unknown,
  durationMs: number,
  attempt: number,
  span: CallSpan,
): Promise<FinishedOutcome> {
  const { scope, ref } = call;
  const { log, events, kind } = scope.init;
  faultPoint("call.before-done");
  let result: JsonValue;
  try {
    result = encodeValue(scope.codec, returned === undefined ? null : returned, `the result of ${ref.tool}`);
    await log.append({ ...base, kind: "done", result });
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw span.end("in_doubt", error);
    await log.append({ ...base, kind: "unrecordable", reason: error.message });
    throw span.end("in_doubt", scope.leaveInDoubt(new UnrecordableResult(ref.tool, error)));
  }
  span.end("done");
  faultPoint("call.after-done");
  await emit(events, { type: "call.done", runId: scope.runId, kind, call: ref, attempt, durationMs });
  return { status: "ok", value: result };
}
