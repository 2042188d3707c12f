import { CheckpointConflict } from "@durable/core";
import { ASLEEP } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase, ConformanceGroup } from "./case.js";
import { sleep } from "./clock.js";
import { claim, expectLeaseHeld, leaseHeldBy, leaseRule, listedClaimable, OWNER_A, PAST_MS } from "./lease-checks.js";
import { expectRejects } from "./rule.js";

/** How long the kit's runs sleep: long enough to look at them asleep, short enough to wait out. */
const SLEEP_MS = 1_200;
/** How many workers race to wake a run. */
const RACERS = 8;

/**
 * A run put to sleep as a worker does it: step 0 claimed by A, then step 1,
 * the same segment, handing the lease to the sleep (`ASLEEP`) for `SLEEP_MS`.
 */
async function asleep(h: Harness, flow: string): Promise<string> {
  const runId = h.runId("asleep");
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: 300_000 });
  await h.store.save(runId, 1, h.row(runId, 1, { name: flow }), { owner: ASLEEP, ms: SLEEP_MS });
  return runId;
}

const asleepCase: ConformanceCase = {
  name: "a save that hands a run's lease to its sleep holds it from every claim and from the claimable listing until the wake time by the store's clock; then one of racing workers wakes it",
  timeout: 30_000,
  async run(h) {
    const flow = h.runId("timers");
    const runId = await asleep(h, flow);
    const after = `save(runId, 1) from segment 0 with a ${SLEEP_MS} ms lease for ${ASLEEP}`;
    const held = await leaseHeldBy(h, runId, ASLEEP, after);
    expect(
      held.expiresAt - held.now,
      leaseRule(`leaseOf(runId) after ${after}`, `the sleep's lease, ending within ${SLEEP_MS} ms of the store's now`),
    ).toBeLessThanOrEqual(SLEEP_MS);
    expect(
      await listedClaimable(h, flow, runId),
      leaseRule(`listUnfinished(flow, { claimable: true }) while the run sleeps`, "not the run"),
    ).toBe(false);
    await expectLeaseHeld(h, runId, "save(runId, 2) from segment 1 by B while the run sleeps", held, () =>
      claim(h, runId, 2, 1, { owner: "worker-b", ms: 300_000 }, { name: flow }),
    );
    // The worker that put it to sleep holds nothing any more: its renewal would keep the run from waking.
    await expectRejects(
      CheckpointConflict,
      leaseRule(`renew(runId, 0, A) after ${after}`, "CheckpointConflict: the lease is the sleep's"),
      h.store.renew(runId, 0, { owner: OWNER_A, ms: 300_000 }),
    );

    await sleep(Math.max(0, held.expiresAt - held.now) + PAST_MS);
    expect(
      await listedClaimable(h, flow, runId),
      leaseRule("listUnfinished(flow, { claimable: true }) once the sleep's lease ran out", "the run"),
    ).toBe(true);
    const claims = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) =>
        claim(h, runId, 2, 1, { owner: `waker-${i}`, ms: 300_000 }, { name: flow }),
      ),
    );
    const won = claims.flatMap((outcome, i) => (outcome.status === "fulfilled" ? [`waker-${i}`] : []));
    expect(
      won,
      leaseRule(`${RACERS} racing save(runId, 2) from segment 1 once the sleep ran out`, "exactly one accepted"),
    ).toHaveLength(1);
    const lost = claims.filter((outcome) => outcome.status === "rejected");
    for (const outcome of lost)
      expect(
        (outcome as PromiseRejectedResult).reason,
        leaseRule("a racing claim that lost", "CheckpointConflict: another worker holds the run"),
      ).toBeInstanceOf(CheckpointConflict);
    await leaseHeldBy(h, runId, won[0] as string, "the claim that woke the run");
  },
};

export const timersGroup: ConformanceGroup = {
  name: "timers",
  proves:
    "a run asleep holds no worker: the lease its sleep holds keeps every claim and the claimable listing off it until the wake time by the store's clock, and then exactly one of racing workers wakes it",
  cases: [asleepCase],
};
