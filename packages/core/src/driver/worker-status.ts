import type { ScheduleStatus } from "./ticker.js";

/**
 * Why a worker left a run: it waits for a decision, it cannot go on here, another worker (or kind of run) has it,
 * the store failed it (tried again after a poll, so a run whose claims keep failing is not claimed in a hot loop),
 * it sleeps, or it is of a version the worker does not serve.
 */
export type Left = "decision" | "stuck" | "lost" | "unavailable" | "asleep" | "version";

/** What a worker is doing. */
export interface WorkerStatus {
  /** Runs it drives now. */
  readonly running: number;
  /** Runs it left because a call of theirs is in doubt: they wait for a decision. */
  readonly waitingForDecision: number;
  /** Runs it left for another reason it reported through `onStuck`. */
  readonly stuck: number;
  /** Runs it left because they are of a version it does not serve: a worker of theirs goes on with them. */
  readonly otherVersion: number;
  /** Runs it took and drove until they were done, paused, asleep or failed (a failed run is reported through `onFailed`, not as stuck). */
  readonly finished: number;
  /** Claims it lost to another worker. */
  readonly lost: number;
  /** Runs it gave up at its stop deadline: released for another worker. */
  readonly gaveUp: number;
  readonly stopping: boolean;
  /** Each schedule it serves, with its next tick. */
  readonly schedules: readonly ScheduleStatus[];
}
