import { CheckpointConflict, CheckpointNotFound, StoreUnavailable } from "../base/errors.js";
import type { ServedRuns } from "./program.js";
import type { Schedule } from "./schedule.js";

/** A schedule as one worker serves it (`WorkerStatus.schedules`). */
export interface ScheduleStatus {
  readonly name: string;
  /** The next tick this worker will start, by its own clock; none when no tick comes (or it has not started). */
  readonly next: Date | undefined;
  /** Ticks whose run this worker started. */
  readonly started: number;
  /** Ticks whose run it found started by another worker: stored already, or its step 0 refused. */
  readonly startedElsewhere: number;
}

/** A tick's run, as the worker drives it in one of its slots. */
export interface TickRun {
  /** Starts the run and drives it: what a recovery gives, or its error. */
  start(signal: AbortSignal): Promise<unknown>;
  /** The drive returned: the run started here. */
  started(): void;
  /**
   * Takes the drive's error: true when it was the tick's own (started
   * elsewhere, never started, or the store failed: tried again), false when
   * the run started here and the error is the run's, for the worker to handle
   * as it handles any run's.
   */
  failed(error: unknown, signal: AbortSignal): Promise<boolean>;
}

/** A worker's slots, as its ticker fills them. */
export interface Slots {
  /** True while the worker may drive one more run. */
  free(): boolean;
  /** True when it drives the run already (a recovery of a tick's run). */
  drives(runId: string): boolean;
  drive(served: ServedRuns, runId: string, tick: TickRun): void;
}

/** At most this long after its time a worker waits to start a tick, so a fleet does not race on every tick. */
const MAX_SPREAD_MS = 1_000;

/**
 * A worker's clock for its schedules: which tick of each is due, by the
 * worker's own clock, and the start of each due tick's run in a free slot.
 * It goes through every tick from its start on, however late it gets to one;
 * which came before it started is the schedule's catch-up policy. Which
 * worker starts a tick is settled by the run id, never by a clock.
 */
export class Ticker {
  readonly #courses: Course[];
  readonly #retryMs: number;
  readonly #onStuck: ((runId: string, error: unknown) => void) | undefined;

  constructor(
    schedules: readonly Schedule[],
    options: { readonly retryMs: number; readonly onStuck?: ((runId: string, error: unknown) => void) | undefined },
  ) {
    this.#courses = schedules.map((schedule) => new Course(schedule));
    this.#retryMs = options.retryMs;
    this.#onStuck = options.onStuck;
  }

  /** Sets each schedule's first tick: the next to come, or with `catchUp: "once"` the latest that came. */
  arm(now: number): void {
    for (const course of this.#courses) course.arm(now);
  }

  /** Starts the due ticks' runs while the worker has free slots; returns how many it started. */
  async startDue(slots: Slots): Promise<number> {
    let took = 0;
    for (const course of this.#courses)
      while (slots.free()) {
        const tick = course.take(Date.now());
        if (tick === undefined) break;
        if (await this.#start(course, tick, slots)) took += 1;
      }
    return took;
  }

  /** How long until a tick is due, in ms from now (0 when one is); none when no tick comes. */
  wait(now: number): number | undefined {
    let least: number | undefined;
    for (const course of this.#courses) {
      const wait = course.wait(now);
      if (wait !== undefined && (least === undefined || wait < least)) least = wait;
    }
    return least;
  }

  status(): ScheduleStatus[] {
    return this.#courses.map((course) => course.status());
  }

  async #start(course: Course, tick: number, slots: Slots): Promise<boolean> {
    const { schedule } = course;
    const runId = schedule.runId(tick);
    // Read first: a tick another worker started costs one read here, not a start its store refuses.
    const stored = slots.drives(runId) || (await isStored(schedule.served, runId));
    if (stored === undefined) {
      course.again(tick, Date.now() + this.#retryMs);
      return false;
    }
    if (stored) {
      course.startedElsewhere += 1;
      return false;
    }
    slots.drive(schedule.served, runId, {
      start: (signal) => schedule.start(tick, signal),
      started: () => {
        course.started += 1;
      },
      failed: (error, signal) => this.#failed(course, tick, error, signal),
    });
    return true;
  }

  async #failed(course: Course, tick: number, error: unknown, signal: AbortSignal): Promise<boolean> {
    // The worker gave it up as it stopped: as with any run, nothing to report.
    if (signal.aborted) return true;
    // Another worker's step 0 landed first (the loser's writes all fail with it, so none of its tools ran).
    if (error instanceof CheckpointConflict) {
      course.startedElsewhere += 1;
      return true;
    }
    const runId = course.schedule.runId(tick);
    const stored = error instanceof StoreUnavailable ? undefined : await isStored(course.schedule.served, runId);
    if (stored === undefined) {
      // Whether its step 0 landed is not known: tried again after a while, reading first.
      course.again(tick, Date.now() + this.#retryMs);
      return true;
    }
    if (stored) {
      course.started += 1;
      return false;
    }
    // It never started: `start` threw, or the runner refused its input. Every worker finds the same: reported, not retried.
    this.#onStuck?.(runId, error);
    return true;
  }
}

/** One schedule's ticks as a worker goes through them. */
class Course {
  readonly schedule: Schedule;
  started = 0;
  startedElsewhere = 0;
  /** The next tick not taken yet, and how long after it this worker takes it. */
  #next: number | undefined;
  #spread = 0;
  /** Ticks taken whose start the store failed, tried again from `#resumeAt` on. */
  readonly #again: number[] = [];
  #resumeAt = 0;

  constructor(schedule: Schedule) {
    this.schedule = schedule;
  }

  arm(now: number): void {
    const latest = this.schedule.catchUp === "once" ? this.schedule.tickAtOrBefore(now) : undefined;
    if (latest === undefined) this.#advance(now);
    else this.#next = latest;
  }

  /** The tick to start now: one tried again, or the next once it is due; none while the store failed a moment ago. */
  take(now: number): number | undefined {
    if (now < this.#resumeAt) return undefined;
    const again = this.#again.shift();
    if (again !== undefined) return again;
    const tick = this.#next;
    if (tick === undefined || tick + this.#spread > now) return undefined;
    this.#advance(tick);
    return tick;
  }

  /** Tries the tick again at `at`, and takes no other before (the store just failed). */
  again(tick: number, at: number): void {
    this.#again.push(tick);
    this.#resumeAt = at;
  }

  wait(now: number): number | undefined {
    const due = this.#again.length > 0 ? now : this.#next === undefined ? undefined : this.#next + this.#spread;
    return due === undefined ? undefined : Math.max(0, due - now, this.#resumeAt - now);
  }

  status(): ScheduleStatus {
    const { started, startedElsewhere } = this;
    const next = this.#next === undefined ? undefined : new Date(this.#next);
    return { name: this.schedule.name, next, started, startedElsewhere };
  }

  /** Moves to the first tick after `time`, taken up to a tenth of the time to the tick after it late (at most a second). */
  #advance(time: number): void {
    const next = this.schedule.tickAfter(time);
    const following = next === undefined ? undefined : this.schedule.tickAfter(next);
    this.#next = next;
    this.#spread =
      next === undefined || following === undefined
        ? 0
        : Math.random() * Math.min((following - next) / 10, MAX_SPREAD_MS);
  }
}

/** Whether anything is stored for the run; none when the store failed to say. A row that is not as it should be is something stored. */
async function isStored(served: ServedRuns, runId: string): Promise<boolean | undefined> {
  try {
    await served.store.latest(runId);
    return true;
  } catch (error) {
    if (error instanceof CheckpointNotFound) return false;
    return error instanceof StoreUnavailable ? undefined : true;
  }
}
