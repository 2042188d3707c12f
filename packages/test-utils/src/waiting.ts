import { setTimeout as sleep } from "node:timers/promises";

/** Resolves after `ms` (Node's own timer promise). */
export { sleep };

/**
 * Waits until `check` holds, polling every `everyMs`; throws after `ms` by
 * the clock. A deadline, not a count of polls: a busy machine runs polls late.
 */
export async function until(check: () => boolean | Promise<boolean>, ms = 15_000, everyMs = 5): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(everyMs)) if (await check()) return;
  throw new Error(`timed out waiting ${ms} ms`);
}
