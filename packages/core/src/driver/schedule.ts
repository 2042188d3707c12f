import { Cron } from "croner";
import { InvalidInput } from "../base/errors.js";
import { assertStorableText, MAX_NAME_LENGTH } from "../base/names.js";
import { checkOptions, describeType, type OptionTable } from "../base/option-checks.js";
import { MAX_SLEEP_MS } from "../calls/tools.js";
import type { ServedRuns } from "./program.js";

/**
 * What a schedule does with the ticks that came while none of its workers
 * ran: `"skip"` starts none of them, `"once"` starts one run, for the latest.
 */
export type CatchUp = "skip" | "once";

/** Options of a schedule (`FlowRunner.schedule`). See docs/protocol.md, "Schedules". */
export interface ScheduleOptions {
  /**
   * Names the schedule in the fleet and in its runs' ids, `<name>@<tick>`:
   * 1 to 128 characters, no `@`. One schedule per name in a store: two
   * schedules of one name would take each other's ticks for started.
   */
  readonly name: string;
  /**
   * A cron pattern, read by croner: 5 fields (minute first), 6 (seconds
   * first) or 7 (a year last); names, ranges, steps, `L`, `W`, `#` and
   * nicknames such as `@daily`. Give this or `every`.
   */
  readonly cron?: string;
  /** A tick every this many ms, counted from the Unix epoch (3,600,000: on every hour, UTC). Give this or `cron`. */
  readonly every?: number;
  /** The IANA time zone the cron pattern is read in (default `"UTC"`, so workers in any zone agree). */
  readonly timezone?: string;
  /**
   * The input of a tick's run, given the tick's time (a promise of it is
   * awaited). More than one worker may call it for a tick; one run starts.
   */
  readonly start: (tick: Date) => unknown;
  /** Ticks that came while no worker served the schedule: none started (`"skip"`, the default), or the latest (`"once"`). */
  readonly catchUp?: CatchUp;
}

/** What a runner gives a schedule: the runs it starts, and how to start one. */
export interface ScheduleTarget {
  /** The runs as a worker serves them: a worker serves them with the schedule, so a tick's run whose worker died goes on. */
  readonly served: ServedRuns;
  /**
   * Starts run `runId` from `input` and drives it until it is done, paused,
   * asleep or failed. A run id that is taken is `CheckpointConflict`, before
   * any tool runs.
   */
  start(input: unknown, options: { readonly runId: string; readonly signal: AbortSignal }): Promise<unknown>;
}

const SCHEDULE_OPTIONS: OptionTable<ScheduleOptions> = {
  name: "string",
  cron: "string",
  every: true,
  timezone: "string",
  start: "function",
  catchUp: true,
};

/** The ticks of a schedule, in ms since the epoch. */
interface Ticks {
  /** The first tick strictly after `time`, or none when no tick comes. */
  after(time: number): number | undefined;
  /** The latest tick at or before `time`. */
  atOrBefore(time: number): number | undefined;
}

/**
 * A run per tick, across the fleet: every worker that serves the schedule
 * starts the tick's run under one id, `<name>@<tick>`, and the store's
 * compare-and-set on step 0 lets one of them. Made by a runner
 * (`FlowRunner.schedule`), served by `startWorker({ schedules })`. Its
 * options are checked when it is made: `InvalidInput` before any worker starts.
 */
export class Schedule {
  readonly name: string;
  readonly catchUp: CatchUp;
  /** The runs it starts, which its workers serve too. */
  readonly served: ServedRuns;
  readonly #ticks: Ticks;
  readonly #input: (tick: Date) => unknown;
  readonly #target: ScheduleTarget;

  constructor(options: ScheduleOptions, target: ScheduleTarget) {
    checkOptions("schedule", options, SCHEDULE_OPTIONS);
    this.name = scheduleName(options.name);
    const where = `schedule ${JSON.stringify(this.name)}`;
    const { catchUp = "skip" } = options;
    if (catchUp !== "skip" && catchUp !== "once")
      throw new InvalidInput(`${where}: catchUp must be "skip" or "once", not ${shown(catchUp)}.`);
    this.catchUp = catchUp;
    if (typeof options.start !== "function")
      throw new InvalidInput(
        `${where}: start must be a function that gives a tick's input, not ${shown(options.start)}.`,
      );
    this.#ticks = ticksOf(where, options);
    this.#input = options.start;
    this.#target = target;
    this.served = target.served;
  }

  /** The first tick strictly after `time` (ms since the epoch), or none when no tick comes. */
  tickAfter(time: number): number | undefined {
    return this.#ticks.after(time);
  }

  /** The latest tick at or before `time`, or none. */
  tickAtOrBefore(time: number): number | undefined {
    return this.#ticks.atOrBefore(time);
  }

  /** The id of the tick's run: `<name>@<tick as ISO 8601, UTC, in ms>`, the same on every worker. */
  runId(tick: number): string {
    return `${this.name}@${new Date(tick).toISOString()}`;
  }

  /** Starts the tick's run (`ScheduleTarget.start`) with the input `start` gives for it. */
  async start(tick: number, signal: AbortSignal): Promise<unknown> {
    const input = await this.#input(new Date(tick));
    return this.#target.start(input, { runId: this.runId(tick), signal });
  }
}

/** The schedule's name, checked: it makes run ids, and `<name>@` lists its runs (`runIdPrefix`), so it holds no `@`. */
function scheduleName(name: unknown): string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_NAME_LENGTH || name.includes("@"))
    throw new InvalidInput(
      `schedule: name must be 1 to ${MAX_NAME_LENGTH} characters without "@", not ${shown(name)}.`,
    );
  return assertStorableText(name, `The schedule name ${JSON.stringify(name)}`);
}

function ticksOf(where: string, options: ScheduleOptions): Ticks {
  const { cron, every, timezone } = options;
  if ((cron === undefined) === (every === undefined))
    throw new InvalidInput(
      `${where}: give either cron (a cron pattern) or every (ms between ticks), ${cron === undefined ? "not neither" : "not both"}.`,
    );
  if (every !== undefined) {
    if (typeof every !== "number" || !Number.isSafeInteger(every) || every < 1 || every > MAX_SLEEP_MS)
      throw new InvalidInput(
        `${where}: every must be a whole number of ms from 1 to ${MAX_SLEEP_MS}, not ${shown(every)}.`,
      );
    if (timezone !== undefined)
      throw new InvalidInput(`${where}: timezone is for cron; every counts its ticks from the Unix epoch.`);
    return everyTicks(every);
  }
  return cronTicks(where, cron as string, timezone ?? "UTC");
}

/** Ticks on the multiples of `every` since the epoch: every worker derives the same ones, whenever it started. */
function everyTicks(every: number): Ticks {
  return {
    after: (time) => (Math.floor(time / every) + 1) * every,
    atOrBefore: (time) => Math.floor(time / every) * every,
  };
}

function cronTicks(where: string, pattern: string, timezone: string): Ticks {
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
  } catch {
    throw new InvalidInput(`${where}: timezone ${JSON.stringify(timezone)} is not an IANA time zone.`);
  }
  let cron: Cron;
  try {
    cron = new Cron(pattern, { timezone });
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/\s+/g, " ") : String(error);
    throw new InvalidInput(`${where}: cron ${JSON.stringify(pattern)} is not a cron pattern (${why}).`);
  }
  // croner reads an ISO date as a one-off time: a schedule's pattern must repeat.
  if (cron.getOnce() !== null)
    throw new InvalidInput(`${where}: cron ${JSON.stringify(pattern)} is a date, not a cron pattern.`);
  if (cron.nextRun() === null)
    throw new InvalidInput(`${where}: cron ${JSON.stringify(pattern)} matches no time from now on.`);
  return {
    after: (time) => cron.nextRun(new Date(time))?.getTime(),
    // previousRuns gives runs strictly before its reference.
    atOrBefore: (time) => cron.previousRuns(1, new Date(time + 1))[0]?.getTime(),
  };
}

function shown(value: unknown): string {
  if (typeof value === "number") return String(value);
  return typeof value === "string" ? JSON.stringify(value) : describeType(value);
}
