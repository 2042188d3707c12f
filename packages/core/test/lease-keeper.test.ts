import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CheckpointConflict, MemoryCheckpointStore, StoreUnavailable } from "../src/index.js";
import { LeaseKeeper } from "../src/runner.js";
import { checkLeasesOf } from "../src/run/lease.js";

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

  it("tells its drive it lost the run when a renewal is refused, and renews no more", async () => {
    const store = new MemoryCheckpointStore();
    let renewals = 0;
    store.renew = async () => {
      renewals += 1;
      throw new CheckpointConflict("r", "segment 1 is not the run's current one (2): this worker was cut off.");
    };
    const lost: unknown[] = [];
    const keeper = new LeaseKeeper(
      store,
      "r",
      TERMS,
      () => 1,
      (error) => lost.push(error),
    );
    keeper.saved(performance.now());
    await vi.advanceTimersByTimeAsync(2_000);
    expect(renewals).toBe(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toBeInstanceOf(CheckpointConflict);
    expect(String(lost[0])).toContain('Run "r": this drive lost the run: its lease renewal was refused');
  });

  it("renews at once when a cancel in this process checks the run's leases, and says the run was cancelled", async () => {
    const store = new MemoryCheckpointStore();
    const renewals: number[] = [];
    store.renew = async () => {
      renewals.push(performance.now());
      throw new CheckpointConflict("r", "the run is failed: it holds no lease to renew.");
    };
    const lost: unknown[] = [];
    const keeper = new LeaseKeeper(
      store,
      "r",
      TERMS,
      () => 1,
      (error) => lost.push(error),
    );
    keeper.saved(performance.now());
    await vi.advanceTimersByTimeAsync(10);
    checkLeasesOf("r", "it was cancelled (customer left)");
    await vi.advanceTimersByTimeAsync(0);
    expect(renewals).toEqual([10]);
    expect(String(lost[0])).toContain("this drive lost the run: it was cancelled (customer left)");
    // A stopped keeper is no longer reached.
    checkLeasesOf("r", "again");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(renewals).toEqual([10]);
  });
});
