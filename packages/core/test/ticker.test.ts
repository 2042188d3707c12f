import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointStore,
  Schedule,
  type ScheduleOptions,
  StoreUnavailable,
} from "../src/index.js";
import type { ServedRuns } from "../src/runner.js";
import { type Slots, Ticker, type TickRun } from "../src/driver/ticker.js";

// A worker's ticker on a clock of the test's own: which tick is due when, what it starts, what it leaves to others.

const MINUTE = 60_000;
const at = (hh: number, mm: number, ss = 0) => Date.UTC(2030, 0, 1, hh, mm, ss);

/** Runs the store holds, and whether it answers. */
class Runs {
  readonly stored = new Set<string>();
  down = false;
  readonly served: ServedRuns = {
    kind: "flow",
    name: "report",
    store: {
      latest: async (runId: string) => {
        if (this.down) throw new StoreUnavailable("the store is down.");
        if (!this.stored.has(runId)) throw new CheckpointNotFound(runId);
        return {};
      },
    } as unknown as CheckpointStore,
    recover: async () => undefined,
  };
}

/** The worker's slots: what the ticker drove, by run id, with the tick's handle. */
class FakeSlots implements Slots {
  readonly driven = new Map<string, TickRun>();
  size = 8;
  free(): boolean {
    return this.driven.size < this.size;
  }
  drives(runId: string): boolean {
    return this.driven.has(runId);
  }
  drive(_: ServedRuns, runId: string, tick: TickRun): void {
    this.driven.set(runId, tick);
  }
}

function setup(options: Partial<ScheduleOptions> = {}, onStuck?: (runId: string, error: unknown) => void) {
  const runs = new Runs();
  const schedule = new Schedule(
    { name: "beat", every: MINUTE, start: () => ({}), ...options },
    { served: runs.served, start: async () => undefined },
  );
  const ticker = new Ticker([schedule], { retryMs: 5_000, onStuck });
  return { runs, ticker, slots: new FakeSlots() };
}

const id = (time: number) => `beat@${new Date(time).toISOString()}`;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("a worker's ticker", () => {
  it("with catchUp skip starts no tick that came before it, then the next once it is due (at most a second late)", async () => {
    const { ticker, slots } = setup();
    vi.setSystemTime(at(10, 0, 30));
    ticker.arm(Date.now());
    expect(ticker.status()).toEqual([{ name: "beat", next: new Date(at(10, 1)), started: 0, startedElsewhere: 0 }]);
    expect(await ticker.startDue(slots)).toBe(0);
    const wait = ticker.wait(Date.now()) as number;
    // Due at 10:01, spread by up to a tenth of a minute but at most a second.
    expect(wait).toBeGreaterThanOrEqual(30_000);
    expect(wait).toBeLessThan(31_000);
    vi.setSystemTime(at(10, 1, 1));
    expect(ticker.wait(Date.now())).toBe(0);
    expect(await ticker.startDue(slots)).toBe(1);
    expect([...slots.driven.keys()]).toEqual([id(at(10, 1))]);
    expect(ticker.status()[0]?.next).toEqual(new Date(at(10, 2)));
  });

  it("with catchUp once starts the latest tick that came before it at once", async () => {
    const { ticker, slots } = setup({ catchUp: "once" });
    vi.setSystemTime(at(10, 3, 30));
    ticker.arm(Date.now());
    expect(ticker.wait(Date.now())).toBe(0);
    expect(await ticker.startDue(slots)).toBe(1);
    expect([...slots.driven.keys()]).toEqual([id(at(10, 3))]);
  });

  it("starts every tick from its start on, however late it gets to them, in order, while it has free slots", async () => {
    const { ticker, slots } = setup();
    vi.setSystemTime(at(10, 0, 30));
    ticker.arm(Date.now());
    vi.setSystemTime(at(10, 5, 30));
    slots.size = 3;
    expect(await ticker.startDue(slots)).toBe(3);
    expect([...slots.driven.keys()]).toEqual([1, 2, 3].map((m) => id(at(10, m))));
    // Full: it waits for a slot, and takes no tick meanwhile.
    expect(await ticker.startDue(slots)).toBe(0);
    slots.size = 8;
    expect(await ticker.startDue(slots)).toBe(2);
    expect([...slots.driven.keys()].slice(3)).toEqual([4, 5].map((m) => id(at(10, m))));
  });

  it("leaves a tick whose run is stored already to the worker that started it, reading once", async () => {
    const { runs, ticker, slots } = setup();
    vi.setSystemTime(at(10, 0, 30));
    ticker.arm(Date.now());
    runs.stored.add(id(at(10, 1)));
    vi.setSystemTime(at(10, 2, 30));
    expect(await ticker.startDue(slots)).toBe(1);
    expect([...slots.driven.keys()]).toEqual([id(at(10, 2))]);
    expect(ticker.status()[0]).toMatchObject({ started: 0, startedElsewhere: 1 });
  });

  it("tries a tick again after a while when the store did not answer, and takes no other meanwhile", async () => {
    const { runs, ticker, slots } = setup();
    vi.setSystemTime(at(10, 0, 30));
    ticker.arm(Date.now());
    vi.setSystemTime(at(10, 2, 30));
    runs.down = true;
    expect(await ticker.startDue(slots)).toBe(0);
    expect(ticker.wait(Date.now())).toBe(5_000);
    runs.down = false;
    expect(await ticker.startDue(slots)).toBe(0);
    vi.setSystemTime(at(10, 2, 35));
    expect(await ticker.startDue(slots)).toBe(2);
    expect([...slots.driven.keys()]).toEqual([id(at(10, 1)), id(at(10, 2))]);
  });

  it("settles each way a tick's drive may end", async () => {
    const stuck: string[] = [];
    const { runs, ticker, slots } = setup({}, (runId, error) => stuck.push(`${runId}: ${(error as Error).message}`));
    vi.setSystemTime(at(10, 0, 30));
    ticker.arm(Date.now());
    vi.setSystemTime(at(10, 5, 30));
    await ticker.startDue(slots);
    const [conflict, down, failed, refused, aborted] = [...slots.driven.values()] as TickRun[];
    const live = new AbortController().signal;

    // Another worker's step 0 landed first: started elsewhere, nothing for the worker to do.
    expect(await conflict?.failed(new CheckpointConflict(id(at(10, 1)), "step 0 is taken."), live)).toBe(true);
    // The store failed it: tried again, reading first.
    expect(await down?.failed(new StoreUnavailable("down."), live)).toBe(true);
    // Its run started here, then failed: the worker handles the run's error as any run's.
    runs.stored.add(id(at(10, 3)));
    expect(await failed?.failed(new Error("the node threw"), live)).toBe(false);
    // It never started (the input was refused): reported once, not tried again.
    expect(await refused?.failed(new Error("the input was refused"), live)).toBe(true);
    // Given up as the worker stopped: nothing to report.
    const stopped = new AbortController();
    stopped.abort();
    expect(await aborted?.failed(new Error("aborted"), stopped.signal)).toBe(true);

    expect(stuck).toEqual([`${id(at(10, 4))}: the input was refused`]);
    expect(ticker.status()[0]).toMatchObject({ started: 1, startedElsewhere: 1 });
    vi.setSystemTime(at(10, 5, 36));
    slots.driven.clear();
    expect(await ticker.startDue(slots)).toBe(1);
    expect([...slots.driven.keys()]).toEqual([id(at(10, 2))]);
  });

  it("spreads each tick by less than a tenth of the time to the next, so a fleet does not race on every tick", async () => {
    const { ticker } = setup({ every: 200 });
    for (let i = 0; i < 50; i++) {
      vi.setSystemTime(at(10, 0) + i * 1_000 + 1);
      ticker.arm(Date.now());
      const wait = ticker.wait(Date.now()) as number;
      expect(wait).toBeGreaterThanOrEqual(199);
      expect(wait).toBeLessThan(199 + 20);
    }
  });

  it("a cron that ends has no next tick", async () => {
    const { ticker } = setup({ every: undefined, cron: "0 0 0 1 1 * 2099" });
    vi.setSystemTime(at(10, 0));
    ticker.arm(Date.now());
    expect(ticker.status()[0]?.next).toEqual(new Date(Date.UTC(2099, 0, 1)));
    vi.setSystemTime(Date.UTC(2099, 5, 1));
    ticker.arm(Date.now());
    expect(ticker.status()[0]?.next).toBeUndefined();
    expect(ticker.wait(Date.now())).toBeUndefined();
  });
});
