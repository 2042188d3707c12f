import { InvalidInput, NonRetryable } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";

/** How a tool's failed calls are tried again (`ToolOptions.retry`). */
export interface RetryPolicy {
  /** How many attempts in all, the first included (default 3). */
  readonly attempts?: number;
  /** The wait before the second attempt, in ms (default 1,000). */
  readonly initialDelayMs?: number;
  /** How much each wait grows over the one before (default 2). */
  readonly factor?: number;
  /** The longest wait, in ms (default 60,000). */
  readonly maxDelayMs?: number;
  /** The share of each wait taken off at random, 0 to 1 (default 0.2): calls that failed together do not retry together. */
  readonly jitter?: number;
  /** Whether an error is worth another attempt (default: every error but a `NonRetryable`, which never is). */
  readonly retryIf?: (error: unknown) => boolean;
}

const RETRY_OPTIONS: OptionTable<RetryPolicy> = {
  attempts: true,
  initialDelayMs: true,
  factor: true,
  maxDelayMs: true,
  jitter: true,
  retryIf: "function",
};

/** A retry policy with its defaults. */
export type ResolvedRetry = Required<Omit<RetryPolicy, "retryIf">> & Pick<RetryPolicy, "retryIf">;

/** The longest wait between attempts: what one timer can hold. */
const MAX_DELAY_MS = 2_147_483_647;

/** No retry: one attempt. */
const NO_RETRY: ResolvedRetry = {
  attempts: 1,
  initialDelayMs: 1_000,
  factor: 2,
  maxDelayMs: 60_000,
  jitter: 0.2,
};

/** The policy with its defaults, checked: `InvalidInput` naming `where` before anything runs. */
export function resolveRetry(where: string, policy: RetryPolicy | undefined): ResolvedRetry {
  if (policy === undefined) return NO_RETRY;
  checkOptions(`${where}: retry`, policy, RETRY_OPTIONS);
  const resolved: ResolvedRetry = {
    attempts: policy.attempts ?? 3,
    initialDelayMs: policy.initialDelayMs ?? NO_RETRY.initialDelayMs,
    factor: policy.factor ?? NO_RETRY.factor,
    maxDelayMs: policy.maxDelayMs ?? NO_RETRY.maxDelayMs,
    jitter: policy.jitter ?? NO_RETRY.jitter,
    ...(policy.retryIf === undefined ? {} : { retryIf: policy.retryIf }),
  };
  const whole = (name: "attempts" | "initialDelayMs" | "maxDelayMs", min: number) => {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < min)
      throw new InvalidInput(`${where}: retry.${name} must be a whole number ≥ ${min}, not ${String(value)}.`);
  };
  whole("attempts", 1);
  whole("initialDelayMs", 0);
  whole("maxDelayMs", 0);
  // A timer holds at most 2³¹ − 1 ms (about 24.8 days); a longer wait would fire at once.
  for (const name of ["initialDelayMs", "maxDelayMs"] as const)
    if (resolved[name] > MAX_DELAY_MS)
      throw new InvalidInput(`${where}: retry.${name} must be at most ${MAX_DELAY_MS} ms, not ${resolved[name]}.`);
  if (typeof resolved.factor !== "number" || !(resolved.factor >= 1) || !Number.isFinite(resolved.factor))
    throw new InvalidInput(`${where}: retry.factor must be a number ≥ 1, not ${String(resolved.factor)}.`);
  if (typeof resolved.jitter !== "number" || !(resolved.jitter >= 0 && resolved.jitter <= 1))
    throw new InvalidInput(`${where}: retry.jitter must be a number from 0 to 1, not ${String(resolved.jitter)}.`);
  return resolved;
}

/** Whether attempt `attempt` (from 1), which threw `error`, is followed by another. */
export function worthRetrying(policy: ResolvedRetry, error: unknown, attempt: number): boolean {
  if (attempt >= policy.attempts || error instanceof NonRetryable) return false;
  try {
    return policy.retryIf?.(error) ?? true;
  } catch {
    // A predicate that throws cannot say yes: the call fails with the tool's own error.
    return false;
  }
}

/** The wait before attempt `attempt` (from 2), in ms: grown by the factor, capped, jittered down. */
export function backoffMs(policy: ResolvedRetry, attempt: number): number {
  const grown = policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 2);
  const capped = Math.min(policy.maxDelayMs, grown);
  return Math.round(capped * (1 - policy.jitter * Math.random()));
}

/**
 * Resolves once this worker's clock (`Date.now`) reached `at`, or rejects
 * with the signal's reason once it is aborted. A timer may fire a millisecond
 * before the wall clock shows its time: the wait goes on until it does, so
 * an attempt never starts before the `retryAt` its log records.
 */
export async function sleepUntil(at: number, signal: AbortSignal | undefined): Promise<void> {
  while (Date.now() < at) await sleep(at - Date.now(), signal);
  if (signal?.aborted) throw signal.reason;
}

/** Resolves after `ms`, or rejects with the signal's reason once it is aborted. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
