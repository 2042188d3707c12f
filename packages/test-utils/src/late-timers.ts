/** How often the watch's own timer ticks, in ms. */
const TICK_MS = 10;
/** How long a late tick is remembered, in ms. */
const KEEP_MS = 120_000;

/**
 * Watches how late this process runs its timers. A process the machine starves
 * (or whose event loop is held by synchronous work) fires every deadline late
 * by as much, so a check that an operation gave up within its timeout allows
 * for that lateness instead of failing on a busy machine.
 */
export class LateTimers {
  readonly #late: { at: number; ms: number }[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor() {
    let last = performance.now();
    this.#timer = setInterval(() => {
      const now = performance.now();
      const ms = now - last - TICK_MS;
      last = now;
      if (ms > 1) this.#late.push({ at: now, ms });
      while (this.#late.length > 0 && this.#late[0]!.at < now - KEEP_MS) this.#late.shift();
    }, TICK_MS);
    this.#timer.unref();
  }

  /**
   * How late timers ran, summed, while anything between `from` and `to`
   * (`performance.now()` times) was pending. Ask a tick or two after `to`:
   * a stall that ends an operation is seen when the next tick runs.
   */
  within(from: number, to: number): number {
    return this.#between(from, to).reduce((sum, tick) => sum + tick.ms, 0);
  }

  /** The longest single stall of this process's timers between `from` and `to`: as long, no timer of it ran. */
  longestWithin(from: number, to: number): number {
    return Math.max(0, ...this.#between(from, to).map((tick) => tick.ms));
  }

  /**
   * Since when this process may have been unable to see something it saw at
   * `at` (`performance.now()`): the start of a stall its timers ended in just
   * then, or `at` itself. Ask a tick or two after `at`.
   */
  stalledSince(at: number): number {
    const ending = this.#late.filter((tick) => tick.at >= at && tick.at - tick.ms - TICK_MS <= at);
    return Math.min(at, ...ending.map((tick) => tick.at - tick.ms - TICK_MS));
  }

  #between(from: number, to: number): { at: number; ms: number }[] {
    return this.#late.filter((tick) => tick.at >= from && tick.at - tick.ms - TICK_MS <= to);
  }

  /** Resolves once the ticks that were due by now have run, so `within` sees them. */
  settled(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, 3 * TICK_MS));
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
