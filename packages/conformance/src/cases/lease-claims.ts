import { CheckpointConflict } from "@durable/core";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase } from "./case.js";
import { sleep, withDateNowShifted } from "./clock.js";
import {
  claim,
  expectLeaseHeld,
  leaseHeldBy,
  leaseRule,
  listedClaimable,
  LONG_MS,
  OWNER_A,
  OWNER_B,
  PAST_MS,
} from "./lease-checks.js";
import { expectRejects, expectResolves } from "./rule.js";

/** The lease of the listing case: long enough that a listing right after its save finds it live under load. */
const LISTING_LEASE_MS = 1_500;

const HOUR_MS = 3_600_000;
/** The lease taken with a drifted worker clock: long enough that a claim right after it is surely within it. */
const DRIFT_LEASE_MS = 1_000;

const shifted = (shift: number) => `Date.now ${shift > 0 ? "an hour ahead" : "an hour behind"}`;

/** Starts a run with A's lease of `ms`. */
async function startHeld(h: Harness, runId: string, ms: number, flow?: string): Promise<void> {
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms });
}

/** A lease taken while the worker's clock is off by `shift`: live right after by the store's clock, run out once its length passed. */
async function checkLeaseTakenWithDriftedClock(h: Harness, shift: number): Promise<void> {
  const runId = h.runId();
  const [first, claimed] = [h.row(runId, 0), h.row(runId, 1, { segment: 1 })];
  await withDateNowShifted(shift, () => h.store.save(runId, 0, first, { owner: OWNER_A, ms: DRIFT_LEASE_MS }));
  const taken = `a ${DRIFT_LEASE_MS} ms lease taken by A with ${shifted(shift)}`;
  const held = await leaseHeldBy(h, runId, OWNER_A, taken);
  await expectLeaseHeld(h, runId, `a claim by B right after ${taken}, the clock put back`, held, () =>
    h.store.save(runId, 1, claimed, { owner: OWNER_B, ms: LONG_MS }),
  );
  await sleep(DRIFT_LEASE_MS + PAST_MS);
  await expectResolves(
    leaseRule(
      `a claim by B ${DRIFT_LEASE_MS + PAST_MS} ms after ${taken}`,
      "accepted: the lease ran out by the store's clock",
    ),
    h.store.save(runId, 1, claimed, { owner: OWNER_B, ms: LONG_MS }),
  );
}

export const leaseClaimCases: readonly ConformanceCase[] = [
  {
    name: "a live lease refuses another owner's claim with LeaseHeld naming the owner and the expiry, writing nothing",
    async run(h) {
      const runId = h.runId();
      await startHeld(h, runId, LONG_MS);
      const held = await leaseHeldBy(h, runId, OWNER_A, `save(runId, 0) with a ${LONG_MS} ms lease for A`);
      const length = held.expiresAt - held.now;
      expect(
        length > LONG_MS / 2 && length <= LONG_MS + 1,
        leaseRule(
          `leaseOf(runId) right after save(runId, 0) with a ${LONG_MS} ms lease`,
          `expiresAt − now at most ${LONG_MS} ms and more than half of it, in ms (it was ${length})`,
        ),
      ).toBe(true);
      await expectLeaseHeld(h, runId, "save(runId, 1) from segment 1 by B while A's lease is live", held, () =>
        claim(h, runId, 1, 1, { owner: OWNER_B, ms: LONG_MS }),
      );
      await expectLeaseHeld(h, runId, "save(runId, 1) from segment 1 with no lease while A's lease is live", held, () =>
        claim(h, runId, 1, 1),
      );
    },
  },
  {
    name: "the owner may claim its run again; takeOver claims a live lease and fences the old owner",
    async run(h) {
      const runId = h.runId();
      await startHeld(h, runId, LONG_MS);
      await expectResolves(
        leaseRule("save(runId, 1) from segment 1 by A, who holds the live lease", "accepted: the owner claims again"),
        claim(h, runId, 1, 1, { owner: OWNER_A, ms: LONG_MS }),
      );
      await leaseHeldBy(h, runId, OWNER_A, "A's claim from segment 1");
      await expectResolves(
        leaseRule("save(runId, 2) from segment 2 by B with takeOver while A's lease is live", "accepted"),
        claim(h, runId, 2, 2, { owner: OWNER_B, ms: LONG_MS, takeOver: true }),
      );
      await leaseHeldBy(h, runId, OWNER_B, "B's takeover");
      const fenced = (operation: string) =>
        leaseRule(`${operation} by A after B took the run over from segment 2`, "CheckpointConflict: A is fenced");
      await expectRejects(
        CheckpointConflict,
        fenced("recordCall(runId, 1, 0)"),
        h.store.recordCall(runId, 1, 0, h.call(runId, 1, 0)),
      );
      await expectRejects(
        CheckpointConflict,
        fenced("renew(runId, 1)"),
        h.store.renew(runId, 1, { owner: OWNER_A, ms: LONG_MS }),
      );
      await expectRejects(
        CheckpointConflict,
        fenced("renew(runId, 2)"),
        h.store.renew(runId, 2, { owner: OWNER_A, ms: LONG_MS }),
      );
      await leaseHeldBy(h, runId, OWNER_B, "A's refused renewals");
    },
  },
  {
    name: "a lease runs out by the store's clock, not by the worker's Date.now",
    timeout: 30_000,
    async run(h) {
      // Taken with the worker's clock right: an hour later by Date.now, the store still says live.
      const flow = h.runId("flow");
      const runId = h.runId();
      await startHeld(h, runId, LONG_MS, flow);
      const claimed = h.row(runId, 1, { name: flow, segment: 1 });
      await withDateNowShifted(HOUR_MS, async () => {
        const held = await leaseHeldBy(h, runId, OWNER_A, `a ${LONG_MS} ms lease for A, read with ${shifted(HOUR_MS)}`);
        expect(
          held.expiresAt > held.now,
          leaseRule(`leaseOf(runId) with ${shifted(HOUR_MS)}`, "expiresAt > now: live by the store's clock"),
        ).toBe(true);
        await expectLeaseHeld(h, runId, `a claim by B of A's live lease with ${shifted(HOUR_MS)}`, held, () =>
          h.store.save(runId, 1, claimed, { owner: OWNER_B, ms: LONG_MS }),
        );
        expect(
          await listedClaimable(h, flow, runId),
          leaseRule(`listUnfinished(flow, { claimable: true }) with ${shifted(HOUR_MS)}`, "not A's live run"),
        ).toBe(false);
      });
      // Taken with the worker's clock off, either way: live right after, run out once its length passed.
      for (const shift of [HOUR_MS, -HOUR_MS]) await checkLeaseTakenWithDriftedClock(h, shift);
    },
  },
  {
    name: "a claim after a lease ran out succeeds, and until then the run is not claimable",
    async run(h) {
      const flow = h.runId("flow");
      const runId = h.runId();
      // Longer than the kit's short lease: the listing right after the save must find it live on a loaded machine too.
      const lease = LISTING_LEASE_MS;
      await startHeld(h, runId, lease, flow);
      const listed = (when: string, expected: boolean) =>
        leaseRule(
          `listUnfinished(flow, { claimable: true }) ${when}`,
          expected ? "the run's id: its lease ran out" : "not the run: its lease is live",
        );
      expect(await listedClaimable(h, flow, runId), listed(`right after a ${lease} ms lease`, false)).toBe(false);
      await sleep(lease + PAST_MS);
      const after = `${lease + PAST_MS} ms after a ${lease} ms lease for A`;
      expect(await listedClaimable(h, flow, runId), listed(after, true)).toBe(true);
      await expectResolves(
        leaseRule(`save(runId, 1) from segment 1 by B ${after}`, "accepted: the lease ran out"),
        claim(h, runId, 1, 1, { owner: OWNER_B, ms: LONG_MS }, { name: flow }),
      );
      await leaseHeldBy(h, runId, OWNER_B, `B's claim ${after}`);
      expect(await listedClaimable(h, flow, runId), listed("after B's claim", false)).toBe(false);
    },
  },
];
