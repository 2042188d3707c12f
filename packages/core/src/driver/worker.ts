import { setMaxListeners } from "node:events";
import {
  CheckpointConflict,
  CheckpointNotFound,
  errorText,
  LeaseHeld,
  QueueFull,
  RecoveryNeedsDecision,
  StoreUnavailable,
} from "../base/errors.js";
import { VersionNotServed } from "../base/code-errors.js";
import type { AsleepResult, ClaimLanded, ServedRuns } from "./program.js";
import { leftMessage, runLine } from "./worker-log.js";
import { isObject } from "../base/option-checks.js";
import { isEnded } from "../store/contract.js";
import { Ticker, type Slots, type TickRun } from "./ticker.js";
import type { Left, WorkerStatus } from "./worker-status.js";
import { checkWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from "./worker-options.js";
import { noLongerOnSignals, stopsOnSignals } from "./worker-signals.js";
import { jitter, within } from "./waits.js";
import { queueDepths } from "./queue.js";
import { observeQueueDepth } from "../telemetry/metrics.js";

export type { WorkerStatus } from "./worker-status.js";

/**
 * A worker a service starts once and forgets: it looks for claimable runs of what it serves (running, no live lease:
 * their worker died or gave them up), recovers them up to its concurrency, and keeps their leases alive while it
 * drives them. A run that needs a decision is reported once and left until its step changes. `stop()` (or SIGTERM)
 * stops taking runs, lets the ones it drives go on until the deadline, then releases them for another worker.
 */
export class RunWorker {
  readonly #options: ResolvedWorkerOptions;
  readonly #running = new Map<string, Promise<void>>();
  /** Runs left at a step, by served name and run id: skipped until their latest step moves on (a lost one, at most a while). */
  readonly #left = new Map<string, { step: number; why: Left; until?: number; lookAgain?: number }>();
  readonly #giveUp = new AbortController();
  readonly #ticker: Ticker;
  /** The slots its ticker starts ticks' runs in: the same as the runs it recovers. */
  readonly #slots: Slots = {
    free: () => !this.#stopping && this.#running.size < this.#options.concurrency,
    drives: (runId) => this.#running.has(runId),
    drive: (served, runId, tick) => void this.#running.set(runId, this.#drive(served, runId, tick)),
  };
  /** Queues not looked at again until then (`performance.now()`): one refused a claim for its concurrency or its rate. */
  readonly #queueFull = new Map<string, { until: number; why: QueueFull["limit"] }>();
  #finished = 0;
  #lost = 0;
  #gaveUp = 0;
  #stopping = false;
  /** Told after each look that took nothing while nothing runs (a drain then ends). */
  #onIdle: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;
  /** Stops reporting its queues' depth (`durable.queue.depth`). */
  #unobserve: (() => void) | undefined;

  constructor(options: WorkerOptions) {
    this.#options = checkWorkerOptions(options);
    this.#ticker = new Ticker(this.#options.schedules, {
      retryMs: this.#options.pollMs,
      onStuck: this.#options.onStuck,
    });
    // Each run it drives listens to the signal until its drive ends: as many as its concurrency, past Node's warning at 10.
    setMaxListeners(this.#options.concurrency + 10, this.#giveUp.signal);
  }

  /** Starts looking for runs; returns the worker. */
  start(): this {
    if (this.#loop !== undefined) return this;
    if (this.#options.stopOnSignals) stopsOnSignals(this);
    this.#ticker.arm(Date.now());
    const { queues, serve } = this.#options;
    if (queues.length > 0)
      this.#unobserve = observeQueueDepth(() =>
        queueDepths(
          queues,
          serve.map((served) => served.store),
        ),
      );
    this.#loop = this.#poll();
    return this;
  }

  status(): WorkerStatus {
    const left = [...this.#left.values()];
    return {
      running: this.#running.size,
      waitingForDecision: left.filter((entry) => entry.why === "decision").length,
      stuck: left.filter((entry) => entry.why === "stuck").length,
      otherVersion: left.filter((entry) => entry.why === "version").length,
      finished: this.#finished,
      lost: this.#lost,
      gaveUp: this.#gaveUp,
      stopping: this.#stopping,
      schedules: this.#ticker.status(),
    };
  }

  /**
   * Stops taking runs, waits for the ones it drives up to the deadline, then gives the rest up: their leases are
   * released at once and each stops before its next save, so another worker claims them without waiting.
   */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  /** Resolves at the first look that takes nothing while nothing runs: no claimable work is left for it. */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.#onIdle = resolve;
      this.#wake?.();
    });
  }

  async #stop(): Promise<void> {
    this.#stopping = true;
    this.#unobserve?.();
    noLongerOnSignals(this);
    this.#wake?.();
    const deadline = performance.now() + this.#options.stopDeadlineMs;
    // A store that hangs holds up the look in progress: the deadline covers it too.
    await within(this.#loop ?? Promise.resolve(), this.#options.stopDeadlineMs);
    const settled = Promise.allSettled(this.#running.values());
    if (!(await within(settled, Math.max(0, deadline - performance.now())))) {
      this.#giveUp.abort();
      // A tool still running is not waited for: its run is released, and its call is in doubt if it never records.
      await within(settled, 1_000);
    }
  }

  async #poll(): Promise<void> {
    let wait = this.#options.pollMs;
    while (!this.#stopping) {
      let took = 0;
      try {
        took += await this.#ticker.startDue(this.#slots);
        for (const queue of this.#options.queues) took += await this.#takeQueue(queue.name);
        for (const served of this.#options.serve) took += await this.#take(served);
        wait = took > 0 ? this.#options.pollMs : Math.min(wait * 2, this.#options.maxPollMs);
        if (took === 0 && this.#running.size === 0) this.#onIdle?.();
      } catch {
        // The listing failed (the store did not answer): look again later, as a worker with nothing to do would.
        wait = Math.min(wait * 2, this.#options.maxPollMs);
      }
      // A full worker looks again as soon as a run ends; an idle one after the jittered wait, or at its next tick.
      const tick = this.#slots.free() ? this.#ticker.wait(Date.now()) : undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(jitter(wait), tick ?? Number.POSITIVE_INFINITY));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /**
   * Takes claimable runs of one served name while it has free slots; returns how many it took. A look through the
   * whole listing forgets the runs of other versions it left that are no longer listed (ended, or held by their
   * own version's worker): an old version's worker meets every run of the new one, and keeps none of them.
   */
  async #take(served: ServedRuns): Promise<number> {
    let took = 0;
    const listed = new Set<string>();
    for await (const runId of served.store.listUnfinished(served.name, { claimable: true })) {
      if (this.#stopping || this.#running.size >= this.#options.concurrency) return took;
      listed.add(leftKey(served, runId));
      if (this.#running.has(runId) || (await this.#stillLeft(served, runId))) continue;
      // Stopped while it read the run's latest step: a run taken now would be given up at once.
      if (this.#stopping) return took;
      this.#running.set(runId, this.#drive(served, runId));
      took += 1;
    }
    const mine = leftKey(served, "").slice(0, -3);
    for (const [key, left] of this.#left)
      if (left.why === "version" && key.startsWith(mine) && !listed.has(key)) this.#left.delete(key);
    return took;
  }

  /**
   * Takes a queue's claimable runs in its order while it has free slots, one claim at a time (each a take the store
   * may refuse), from every store it serves; returns how many it took. A refusal for the queue's concurrency ends the
   * look (`#queueFull`); one for its rate leaves its starts (runs at step 0) until the window has room; one for a
   * run's key skips the run.
   */
  async #takeQueue(queue: string): Promise<number> {
    const full = this.#queueFull.get(queue);
    if (full !== undefined && full.until <= performance.now()) this.#queueFull.delete(queue);
    else if (full !== undefined && full.why !== "rate") return 0;
    // Out of rate, a claim of a run at step 0 (a start) would be refused: only runs that started already are taken.
    const outOfRate = (): boolean => this.#queueFull.get(queue)?.why === "rate";
    let took = 0;
    // Keys one of whose runs this look found full: their other runs wait for the next look.
    const fullKeys = new Set<string>();
    for (const store of new Set(this.#options.serve.map((served) => served.store))) {
      for await (const { runId, name, key, step } of store.listQueued?.(queue) ?? []) {
        if (this.#stopping || this.#running.size >= this.#options.concurrency) return took;
        if ((key !== undefined && fullKeys.has(key)) || this.#running.has(runId)) continue;
        if (outOfRate() && !(step !== undefined && step > 0)) continue;
        const served = await this.#servedFor(store, name, runId);
        if (served === undefined) continue;
        if (this.#stopping) return took;
        let claimed = false;
        let onClaimed = (): void => undefined;
        const landed = new Promise<void>((resolve) => {
          onClaimed = () => {
            claimed = true;
            resolve();
          };
        });
        const drive = this.#drive(served, runId, undefined, onClaimed);
        this.#running.set(runId, drive);
        await Promise.race([drive, landed]);
        if (claimed) took += 1;
        // Refused for its key (or lost for now): the key's other runs would be too.
        else if (key !== undefined && this.#left.get(leftKey(served, runId))?.why === "unavailable") fullKeys.add(key);
        if (this.#queueFull.has(queue) && !outOfRate()) return took;
      }
    }
    return took;
  }

  /** What serves a queued run of `name` on `store`: the first of that name that did not leave it (a flow and a loop may share a name). */
  async #servedFor(store: ServedRuns["store"], name: string, runId: string): Promise<ServedRuns | undefined> {
    for (const served of this.#options.serve)
      if (served.store === store && served.name === name && !(await this.#stillLeft(served, runId))) return served;
    return undefined;
  }

  /** Recovers a run it listed, or starts a tick's run, and keeps what became of it. */
  async #drive(served: ServedRuns, runId: string, tick?: TickRun, onClaimed?: () => void): Promise<void> {
    const { signal } = this.#giveUp;
    // A claim its queue refused frees no slot: its end must not undo the full mark it just set.
    let refused = false;
    let claimed = false;
    try {
      const options = {
        rerunInDoubt: this.#options.rerunInDoubt,
        signal,
        onClaimed: ({ step, takenOver }: ClaimLanded) => {
          claimed = true;
          if (takenOver)
            this.#options.log(runLine("info", served, runId, `took over run ${runId} at step ${step}`, { step }));
          onClaimed?.();
        },
      };
      const result = await (tick === undefined ? served.recover(runId, options) : tick.start(signal));
      tick?.started();
      this.#finished += 1;
      this.#left.delete(leftKey(served, runId));
      // Listed before its wake time by this worker's clock (a clock behind the store's, its sleep's lease released):
      // not looked at again until then, unless it moved on from the step it sleeps at (an operator woke it). Not a
      // run that waits for events: the next one sent makes it due.
      const asleep = isAsleep(result) && result.waitsFor === undefined ? result : undefined;
      const wakesIn = asleep === undefined ? 0 : asleep.until - Date.now();
      if (asleep !== undefined && wakesIn > 0)
        this.#left.set(leftKey(served, runId), { step: asleep.step, why: "asleep", until: this.#after(wakesIn) });
    } catch (error) {
      if (tick !== undefined && (await tick.failed(error, signal))) return;
      // Given up at the stop deadline, whatever the drive threw on its way out: released, not stuck.
      if (signal.aborted) this.#gaveUp += 1;
      else if (error instanceof QueueFull) {
        refused = true;
        this.#queueRefused(served, runId, error);
      } else if (error instanceof LeaseHeld || error instanceof StoreUnavailable) {
        // Another worker claimed it since the listing, or the store failed this drive: tried again after a poll.
        if (error instanceof LeaseHeld) this.#lost += 1;
        this.#left.set(leftKey(served, runId), {
          step: -1,
          why: "unavailable",
          until: this.#after(this.#options.pollMs),
        });
      } else if (error instanceof CheckpointConflict || error instanceof CheckpointNotFound) {
        // Another worker won the race, or it is another kind of run under the same name: not again until it moves on.
        // Once its claim landed, the drive lost the run's lease (a takeover, a cancel) or was fenced.
        if (claimed) this.#options.log(runLine("warn", served, runId, `lost run ${runId}: ${errorText(error)}`));
        this.#lost += 1;
        await this.#leave(served, runId, error, "lost");
      } else if (error instanceof VersionNotServed) await this.#leave(served, runId, error, "version");
      else await this.#leave(served, runId, error, error instanceof RecoveryNeedsDecision ? "decision" : "stuck");
    } finally {
      this.#running.delete(runId);
      // A run that ended, slept or failed here may have freed a slot of its queue: look at the full ones again.
      if (!refused)
        for (const [queue, full] of this.#queueFull) if (full.why === "concurrency") this.#queueFull.delete(queue);
      this.#wake?.();
    }
  }

  /**
   * A claim its queue refused: the queue is full (not looked at again until a run of its own ends, or a poll passed),
   * or its rate has no room (until the store says), or the run's key is full (the run is skipped for a poll).
   */
  #queueRefused(served: ServedRuns, runId: string, error: QueueFull): void {
    const wait = error.limit === "rate" ? (error.retryAfterMs ?? this.#options.pollMs) : this.#options.pollMs;
    if (error.limit === "key")
      this.#left.set(leftKey(served, runId), { step: -1, why: "unavailable", until: this.#after(wait) });
    else this.#queueFull.set(error.queue, { until: this.#after(wait), why: error.limit });
  }

  /** Remembers a run it cannot go on with at its latest step, and reports it once. */
  async #leave(served: ServedRuns, runId: string, error: unknown, why: Left): Promise<void> {
    const latest = await served.store.latest(runId).catch(() => undefined);
    if (latest !== undefined && isEnded(latest.status)) {
      // A tool's or node's error saved the run failed: it ended, as a done run did, and its caller hears why.
      if (why === "lost") return;
      this.#finished += 1;
      if (latest.status === "failed") {
        this.#options.log(
          runLine("error", served, runId, `run ${runId} failed: ${errorText(error)}`, { step: latest.step }),
        );
        this.#options.onFailed?.(runId, error);
      }
      return;
    }
    // A run lost at a step is tried again after a few idle polls, even at the same step: its winner may have died there.
    // One of another version is not read again until then: only a migration moves it on for this worker.
    const later = this.#after(LOST_RETRY_POLLS * this.#options.maxPollMs);
    this.#left.set(leftKey(served, runId), {
      step: latest?.step ?? -1,
      why,
      ...(why === "lost" ? { until: later } : {}),
      ...(why === "version" ? { lookAgain: later } : {}),
    });
    if (why === "lost" || why === "version") return;
    this.#options.log(runLine("warn", served, runId, leftMessage(runId, error), { step: latest?.step ?? -1 }));
    this.#options.onStuck?.(runId, error);
  }

  /** `ms` from now, by the process's clock. */
  #after(ms: number): number {
    return performance.now() + ms;
  }

  /**
   * True while a run it left is still at the step it left it at; one left for a decision stays left while it still
   * needs one, whoever claimed it since, so workers do not take turns claiming it. A run lost to a worker that then
   * died at the step it claimed never moves on by itself: it is tried again after a few idle polls. One left asleep
   * is left until its wake time, or until it moved on from the step it sleeps at (woken).
   */
  async #stillLeft(served: ServedRuns, runId: string): Promise<boolean> {
    const key = leftKey(served, runId);
    const left = this.#left.get(key);
    if (left === undefined) return false;
    const due = left.until !== undefined && performance.now() >= left.until;
    if (left.why === "unavailable" || due) {
      if (due) this.#left.delete(key);
      return !due;
    }
    // Asleep and listed early, or of another version, its step is read again every few idle polls only: a clock
    // behind the store's lists it at every poll until its wake time, and another version's worker may be busy.
    const watched = left.why === "asleep" || left.why === "version";
    if (watched && (left.lookAgain ?? 0) > performance.now()) return true;
    const step = await served.store.latest(runId).then(
      (row) => row.step,
      () => left.step,
    );
    if (watched) {
      if (step === left.step) left.lookAgain = this.#after(LOST_RETRY_POLLS * this.#options.maxPollMs);
      else this.#left.delete(key);
      return step === left.step;
    }
    if (step === left.step) return true;
    const options = { rerunInDoubt: this.#options.rerunInDoubt };
    if (left.why === "decision" && (await served.needsDecision?.(runId, options).catch(() => false)) === true) {
      this.#left.set(key, { step, why: "decision" });
      return true;
    }
    this.#left.delete(key);
    return false;
  }
}

/** Starts a worker for the runs it serves (see `RunWorker`). */
export function startWorker(options: WorkerOptions): RunWorker {
  return new RunWorker(options).start();
}

/** How many idle polls a run lost at one step stays skipped, and a run listed asleep before its wake time is not read. */
const LOST_RETRY_POLLS = 3;

function leftKey(served: ServedRuns, runId: string): string {
  return JSON.stringify([served.kind, served.name, served.version ?? null, runId]);
}

/** True for the result of a recovery that left the run asleep (`AsleepResult`). */
function isAsleep(result: unknown): result is AsleepResult {
  return isObject(result) && result["status"] === "asleep";
}
