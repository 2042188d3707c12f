import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, Schedule, type ScheduleOptions } from "../src/index.js";
import { assertRunId, type ScheduleTarget } from "../src/runner.js";

// A schedule's options, run ids and ticks. Its runs across workers are tested with flows (packages/flow,
// test/schedule.test.ts) and across processes in apps/durability (test/schedule.test.ts).

const MINUTE = 60_000;

/** A target that records what it was asked to start. */
function target(started: Array<{ input: unknown; runId: string }> = []): ScheduleTarget {
  const store = new MemoryCheckpointStore();
  return {
    served: { kind: "flow", name: "report", store, recover: async () => undefined },
    start: async (input, { runId }) => {
      started.push({ input, runId });
      return { status: "done" };
    },
  };
}

const schedule = (options: Partial<ScheduleOptions>) =>
  new Schedule({ name: "nightly", start: () => ({}), ...options } as ScheduleOptions, target());

/** The InvalidInput `make` throws; fails the test if it throws anything else or nothing. */
function refused(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput);
    return (error as Error).message;
  }
  throw new Error("expected InvalidInput, nothing was thrown");
}

/** Every tick after `from` up to `to`, by stepping `tickAfter`. */
function ticksBetween(each: Schedule, from: number, to: number): number[] {
  const ticks: number[] = [];
  for (let tick = each.tickAfter(from); tick !== undefined && tick <= to; tick = each.tickAfter(tick)) ticks.push(tick);
  return ticks;
}

describe("a schedule's options", () => {
  it.each<[string, Partial<ScheduleOptions>, string]>([
    [
      "neither cron nor every",
      {},
      'schedule "nightly": give either cron (a cron pattern) or every (ms between ticks), not neither.',
    ],
    [
      "both cron and every",
      { cron: "0 3 * * *", every: MINUTE },
      'schedule "nightly": give either cron (a cron pattern) or every (ms between ticks), not both.',
    ],
    [
      "every of 0 ms",
      { every: 0 },
      'schedule "nightly": every must be a whole number of ms from 1 to 300000000000000, not 0.',
    ],
    [
      "every of half a ms",
      { every: 0.5 },
      'schedule "nightly": every must be a whole number of ms from 1 to 300000000000000, not 0.5.',
    ],
    [
      "every as text",
      { every: "1000" as never },
      'schedule "nightly": every must be a whole number of ms from 1 to 300000000000000, not "1000".',
    ],
    [
      "every with a timezone",
      { every: MINUTE, timezone: "Europe/Paris" },
      'schedule "nightly": timezone is for cron; every counts its ticks from the Unix epoch.',
    ],
    [
      "cron that is not a pattern",
      { cron: "every night" },
      'schedule "nightly": cron "every night" is not a cron pattern (CronPattern: invalid configuration format (\'every night\'), exactly five, six, or seven space separated parts are required.).',
    ],
    [
      "cron out of range",
      { cron: "61 * * * *" },
      'schedule "nightly": cron "61 * * * *" is not a cron pattern (CronPattern: Invalid value for minute: 61).',
    ],
    [
      "cron that is a date",
      { cron: "2030-01-01T00:00:00" },
      'schedule "nightly": cron "2030-01-01T00:00:00" is a date, not a cron pattern.',
    ],
    [
      "cron that never matches",
      { cron: "0 0 30 2 *" },
      'schedule "nightly": cron "0 0 30 2 *" matches no time from now on.',
    ],
    [
      "an unknown time zone",
      { cron: "0 3 * * *", timezone: "Mars/Olympus" },
      'schedule "nightly": timezone "Mars/Olympus" is not an IANA time zone.',
    ],
    [
      "an unknown catchUp",
      { every: MINUTE, catchUp: "all" as never },
      'schedule "nightly": catchUp must be "skip" or "once", not "all".',
    ],
    [
      "no start",
      { every: MINUTE, start: undefined as never },
      'schedule "nightly": start must be a function that gives a tick\'s input, not undefined.',
    ],
    ["an empty name", { every: MINUTE, name: "" }, 'schedule: name must be 1 to 128 characters without "@", not "".'],
    [
      "a name with @",
      { every: MINUTE, name: "a@b" },
      'schedule: name must be 1 to 128 characters without "@", not "a@b".',
    ],
    [
      "a name of 129 characters",
      { every: MINUTE, name: "n".repeat(129) },
      `schedule: name must be 1 to 128 characters without "@", not "${"n".repeat(129)}".`,
    ],
    [
      "a name with a control character",
      { every: MINUTE, name: "a\nb" },
      'The schedule name "a\\nb" must not hold control characters.',
    ],
    [
      "a misspelled option",
      { every: MINUTE, catchup: "once" } as never,
      "schedule: unknown option `catchup`; did you mean `catchUp`?",
    ],
  ])("%s is InvalidInput on one line, before any worker starts", (_, options, message) => {
    const text = refused(() => schedule(options));
    expect(text).toBe(message);
    expect(text).not.toMatch(/\n/);
  });

  it("defaults to catchUp skip", () => {
    expect(schedule({ every: MINUTE }).catchUp).toBe("skip");
    expect(schedule({ every: MINUTE, catchUp: "once" }).catchUp).toBe("once");
  });
});

describe("a schedule's run ids", () => {
  it("are <name>@<tick as ISO 8601 UTC>: readable, and a valid run id however long the name", () => {
    expect(schedule({ every: MINUTE }).runId(Date.UTC(2030, 0, 2, 3, 4, 5, 6))).toBe(
      "nightly@2030-01-02T03:04:05.006Z",
    );
    const longest = new Schedule({ name: "n".repeat(128), every: 1, start: () => ({}) }, target());
    const runId = longest.runId(8.64e15);
    expect(runId).toBe(`${"n".repeat(128)}@+275760-09-13T00:00:00.000Z`);
    expect(assertRunId(runId)).toBe(runId);
  });

  it("a tick's run starts with the input `start` gives for the tick's time, under the tick's run id", async () => {
    const started: Array<{ input: unknown; runId: string }> = [];
    const ticks: Date[] = [];
    const each = new Schedule(
      {
        name: "digest",
        every: MINUTE,
        start: async (tick) => {
          ticks.push(tick);
          return { day: tick.toISOString().slice(0, 10) };
        },
      },
      target(started),
    );
    const tick = Date.UTC(2030, 4, 6, 7, 8);
    await each.start(tick, new AbortController().signal);
    expect(ticks).toEqual([new Date(tick)]);
    expect(started).toEqual([{ input: { day: "2030-05-06" }, runId: "digest@2030-05-06T07:08:00.000Z" }]);
  });
});

describe("a schedule's ticks", () => {
  it("every: on the multiples of its length since the epoch, whenever asked", () => {
    const each = schedule({ every: 15 * MINUTE });
    const at = Date.UTC(2030, 0, 1, 10, 7, 30);
    expect(each.tickAfter(at)).toBe(Date.UTC(2030, 0, 1, 10, 15));
    expect(each.tickAtOrBefore(at)).toBe(Date.UTC(2030, 0, 1, 10, 0));
    // A tick is at or before itself, and the next one is strictly after it.
    expect(each.tickAtOrBefore(Date.UTC(2030, 0, 1, 10, 15))).toBe(Date.UTC(2030, 0, 1, 10, 15));
    expect(each.tickAfter(Date.UTC(2030, 0, 1, 10, 15))).toBe(Date.UTC(2030, 0, 1, 10, 30));
  });

  it("cron: read in UTC unless a time zone is given, seconds with 6 fields", () => {
    const at = Date.UTC(2030, 0, 1, 10, 7, 30);
    expect(schedule({ cron: "0 3 * * *" }).tickAfter(at)).toBe(Date.UTC(2030, 0, 2, 3));
    expect(schedule({ cron: "0 3 * * *" }).tickAtOrBefore(at)).toBe(Date.UTC(2030, 0, 1, 3));
    // 03:00 in Paris is 02:00 UTC in winter.
    expect(schedule({ cron: "0 3 * * *", timezone: "Europe/Paris" }).tickAfter(at)).toBe(Date.UTC(2030, 0, 2, 2));
    expect(schedule({ cron: "*/20 * * * * *" }).tickAfter(at)).toBe(Date.UTC(2030, 0, 1, 10, 7, 40));
    expect(schedule({ cron: "@hourly" }).tickAfter(at)).toBe(Date.UTC(2030, 0, 1, 11));
    // A tick is at or before itself; its next is strictly after it.
    const tick = Date.UTC(2030, 0, 1, 3);
    expect(schedule({ cron: "0 3 * * *" }).tickAtOrBefore(tick)).toBe(tick);
    expect(schedule({ cron: "0 3 * * *" }).tickAfter(tick)).toBe(Date.UTC(2030, 0, 2, 3));
  });

  it("cron across daylight saving: a fixed time the change skips ticks once just after it, and once when it occurs twice", () => {
    const each = schedule({ cron: "30 2 * * *", timezone: "Europe/Paris" });
    const iso = (from: string) =>
      ticksBetween(each, Date.parse(from), Date.parse(from) + 3 * 86_400_000).map((t) => new Date(t).toISOString());
    // 02:30 did not exist on 2030-03-31 in Paris: 03:00 CEST instead.
    expect(iso("2030-03-30T00:00:00Z")).toEqual([
      "2030-03-30T01:30:00.000Z",
      "2030-03-31T01:00:00.000Z",
      "2030-04-01T00:30:00.000Z",
    ]);
    // 02:30 came twice on 2030-10-27: once.
    expect(iso("2030-10-26T00:00:00Z")).toEqual([
      "2030-10-26T00:30:00.000Z",
      "2030-10-27T00:30:00.000Z",
      "2030-10-28T01:30:00.000Z",
    ]);
  });

  it("every: the ticks between two times are exactly the multiples of its length between them", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: 0, max: 200 }),
        (every, from, span) => {
          const each = schedule({ every });
          const to = from + Math.floor((span * every) / 7);
          const expected: number[] = [];
          for (let k = Math.ceil((from + 1) / every); k * every <= to; k++) expected.push(k * every);
          expect(ticksBetween(each, from, to)).toEqual(expected);
          const latest = each.tickAtOrBefore(to) as number;
          expect(latest <= to && latest > to - every && latest % every === 0).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  /** A cron field for the property below: any, one value, or a step. */
  const field = (max: number) =>
    fc.oneof(
      fc.constant({ text: "*", holds: (_: number) => true }),
      fc.integer({ min: 0, max }).map((value) => ({ text: String(value), holds: (n: number) => n === value })),
      fc
        .integer({ min: 2, max: Math.min(max, 30) })
        .map((step) => ({ text: `*/${step}`, holds: (n: number) => n % step === 0 })),
    );

  it("cron: the ticks between two times are exactly the minutes between them that its minute and hour fields hold, in UTC", () => {
    fc.assert(
      fc.property(
        field(59),
        field(23),
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2090, 0, 1) }),
        fc.integer({ min: 1, max: 24 * 60 }),
        (minute, hour, from, minutes) => {
          const each = schedule({ cron: `${minute.text} ${hour.text} * * *` });
          const to = from + minutes * MINUTE;
          const expected: number[] = [];
          for (let t = (Math.floor(from / MINUTE) + 1) * MINUTE; t <= to; t += MINUTE) {
            const date = new Date(t);
            if (minute.holds(date.getUTCMinutes()) && hour.holds(date.getUTCHours())) expected.push(t);
          }
          const ticks = ticksBetween(each, from, to);
          expect(ticks.map((t) => new Date(t).toISOString())).toEqual(expected.map((t) => new Date(t).toISOString()));
          // The latest tick at or before each tick is itself, and before it, the tick before (the first few, for time).
          for (const [index, tick] of ticks.slice(0, 20).entries()) {
            expect(each.tickAtOrBefore(tick)).toBe(tick);
            if (index > 0) expect(each.tickAtOrBefore(tick - 1)).toBe(ticks[index - 1]);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
