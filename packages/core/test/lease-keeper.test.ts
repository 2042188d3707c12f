import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MemoryCheckpointStore, StoreUnavailable } from "../src/index.js";
import { LeaseKeeper } from "../src/runner.js";

// The keeper renews a run's lease by a timer, counting on a save as a renewal only when the store surely
// renewed on it: a save a third of the lease after the last set. Timers and performance.now are fake here.

const TERMS = { owner: "w", ms: 900 }; // a save renews once 300 ms have passed since the last set

/** A keeper whose store notes when each renewal was asked; the first `failing` of them fail as unreachable. */
function watchedKeeper(failing = 0) {
  const store = new MemoryCheckpointStore();
  const renewals: number[] = [];
  store.renew = async () => {
    renewals.push(performance.now());
    if (renewals.length <= failing) throw new StoreUnavailable("The store did not answer.");
    return { owner: TERMS.owner, expiresAt: 0 };
  };
  return { keeper: new LeaseKeeper(store, "r", TERMS, () => 0), renewals };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("LeaseKeeper", () => {
  it("does not count saves made within a third of the lease as renewals: it renews by its timer a third after the claim", async () => {
    const { keeper, renewals } = watchedKeeper();
    keeper.saved(performance.now()); // the claim set the lease at 0
    for (const at of [100, 200, 290]) {
      await vi.advanceTimersByTimeAsync(at - performance.now());
      keeper.saved(performance.now()); // too early: the store keeps the lease as the claim set it
    }
    await vi.advanceTimersByTimeAsync(300 - performance.now());
    expect(renewals).toEqual([300]);
    await keeper.stop(false);
  });

  it("counts a save a third of the lease after the last set as a renewal: the next is a third after that save", async () => {
    const { keeper, renewals } = watchedKeeper(1);
    keeper.saved(performance.now());
    // The renewal at 300 fails; it would be tried again a tenth of the lease later, at 390.
    await vi.advanceTimersByTimeAsync(310);
    expect(renewals).toEqual([300]);
    keeper.saved(performance.now()); // started 310 ms after the claim: the store surely renewed on it
    await vi.advanceTimersByTimeAsync(610 - performance.now());
    expect(renewals).toEqual([300, 610]);
    await keeper.stop(false);
  });
});
