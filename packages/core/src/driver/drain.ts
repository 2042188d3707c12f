import { InvalidInput } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import type { ServedRuns } from "./program.js";
import type { Queue } from "./queue.js";
import { RunWorker } from "./worker.js";
import { checkWorkerOptions, type WorkerOptions } from "./worker-options.js";

/** Options of `drain`. */
export interface DrainOptions {
  /** What it serves: `runner.served(flow)`, `servedToolLoops(…)`. */
  readonly serve: readonly ServedRuns[];
  /** Queues whose runs it takes first, in their order and within their limits (as `startWorker`'s `queues`). */
  readonly queues?: readonly Queue[];
  /**
   * When it gives up what it still drives, in ms from the call. Give it a
   * few seconds less than the function's own time limit: a tool that ignores
   * its `ctx.signal` is waited for up to one more second.
   */
  readonly deadlineMs: number;
  /** How many runs it drives at once (default 8). */
  readonly concurrency?: number;
  /** How often it looks for runs queued while it drains, in ms (default 200). */
  readonly pollMs?: number;
  /** Run calls in doubt again instead of waiting for a decision. */
  readonly rerunInDoubt?: boolean;
  /** As `startWorker`'s: told of each run it cannot go on with. */
  readonly onStuck?: (runId: string, error: unknown) => void;
  /** As `startWorker`'s: told of each run it drove that then failed. */
  readonly onFailed?: (runId: string, error: unknown) => void;
}

/** What a drain did. */
export interface DrainResult {
  /** Runs it drove to an end, a pause or a sleep (failed ones too: they ended). */
  readonly finished: number;
  /** Runs it still drove at the deadline: given up, their leases released for the next drain or worker. */
  readonly gaveUp: number;
  /** Runs it left because a call of theirs is in doubt, or for another reason it told `onStuck`. */
  readonly stuck: number;
  /** Claims it lost to another worker or drain. */
  readonly lost: number;
  /**
   * True when claimable runs remained as it returned (ones it gave up, ones
   * queued too late, a run it left stuck): drain again soon. True too when
   * the store did not answer that look in time.
   */
  readonly left: boolean;
  /** How long it took, in ms. */
  readonly tookMs: number;
}

const DRAIN_OPTIONS: OptionTable<DrainOptions> = {
  serve: true,
  queues: true,
  deadlineMs: true,
  concurrency: true,
  pollMs: true,
  rerunInDoubt: "boolean",
  onStuck: "function",
  onFailed: "function",
};

/** The longest it waits for the store to say whether claimable runs remain. */
const LEFT_LOOK_MS = 1_000;

/**
 * A worker bounded in time, for a function that stops between requests (a
 * cron- or queue-triggered route handler): it claims the claimable runs of
 * what it serves (started with `runner.start`, due sleepers, orphans of dead
 * workers), drives them until none is left or the deadline comes, then gives
 * up what it still drives as `RunWorker.stop()` does (each run's signal
 * aborts, its lease is released, it stops before its next save), and says
 * what it did. It returns at once when there is nothing to do.
 */
export async function drain(options: DrainOptions): Promise<DrainResult> {
  const started = performance.now();
  checkOptions("drain", options, DRAIN_OPTIONS);
  const { deadlineMs, pollMs = 200, ...rest } = options;
  if (!Array.isArray(options.serve) || options.serve.length === 0)
    throw new InvalidInput("drain: serve must list what it serves, each runner.served(flow) or servedToolLoops(…).");
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs < 1)
    throw new InvalidInput(`drain: deadlineMs must be a whole number of ms ≥ 1, not ${String(deadlineMs)}.`);
  // No backoff while idle (an idle drain ends), no grace at the deadline (the deadline is the grace).
  const workerOptions: WorkerOptions = { ...rest, pollMs, maxPollMs: pollMs, stopDeadlineMs: 0, stopOnSignals: false };
  checkWorkerOptions(workerOptions, "drain");
  const worker = new RunWorker(workerOptions).start();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadlineMs - (performance.now() - started)));
  });
  try {
    await Promise.race([worker.idle(), deadline]);
  } finally {
    clearTimeout(timer);
    await worker.stop();
  }
  const status = worker.status();
  return {
    finished: status.finished,
    // A drive whose tool ignores its signal has not settled yet: its run was given up all the same.
    gaveUp: status.gaveUp + status.running,
    stuck: status.stuck + status.waitingForDecision,
    lost: status.lost,
    left: await anyClaimable(options.serve, options.queues ?? []),
    tookMs: Math.round(performance.now() - started),
  };
}

/** True when a served name or queue has a claimable run, or the store did not answer in time. */
async function anyClaimable(serve: readonly ServedRuns[], queues: readonly Queue[]): Promise<boolean> {
  const look = async (): Promise<boolean> => {
    for (const served of serve) {
      for await (const _ of served.store.listUnfinished(served.name, { claimable: true })) return true;
      for (const queue of queues)
        for await (const run of served.store.listQueued?.(queue.name) ?? []) if (run.name === served.name) return true;
    }
    return false;
  };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<true>((resolve) => {
    timer = setTimeout(() => resolve(true), LEFT_LOOK_MS);
  });
  try {
    return await Promise.race([look().catch(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
