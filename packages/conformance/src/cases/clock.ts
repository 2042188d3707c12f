/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs `action` with this process's `Date.now` off by `shiftMs`, as a worker
 * whose clock drifted sees it, and puts the real one back however it ends. A
 * store keeps leases by its own clock, so nothing it decides may move.
 */
export async function withDateNowShifted<T>(shiftMs: number, action: () => Promise<T>): Promise<T> {
  const real = Date.now;
  Date.now = () => real() + shiftMs;
  try {
    return await action();
  } finally {
    Date.now = real;
  }
}
