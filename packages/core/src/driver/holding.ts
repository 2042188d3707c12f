import type { DurableRun } from "../run/durable-run.js";
import { type AttemptSpan, inContext } from "../telemetry/tracing.js";

/**
 * Does `work` (plan, events, drive) with the run just claimed or started, in its attempt's span, and gives its lease
 * up when the work stops short (the store failed, a call is in doubt, an event sink threw, `signal` aborted): another
 * worker may claim it at once. A run that paused or ended released it with its save.
 */
export async function holding<T>(
  run: DurableRun,
  attempt: AttemptSpan,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const giveUp = (): void => void run.giveUp(signal?.reason);
  signal?.addEventListener("abort", giveUp, { once: true });
  attempt.span.setAttribute("durable.worker", run.lease.owner);
  try {
    signal?.throwIfAborted();
    // The attempt's span is active while it runs: its steps, calls and the tools' own spans are its children.
    const result = await inContext(attempt.context, work);
    await run.stopLease(false);
    attempt.end({ result });
    return result;
  } catch (error) {
    await run.giveUp();
    attempt.end({ error });
    throw error;
  } finally {
    signal?.removeEventListener("abort", giveUp);
  }
}
