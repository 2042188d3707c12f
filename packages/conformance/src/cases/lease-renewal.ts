import { CheckpointConflict, CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import type { ConformanceCase } from "./case.js";
import { sleep } from "./clock.js";
import {
  claim,
  expectLeaseHeld,
  expectNoLease,
  expectSameExpiry,
  leaseHeldBy,
  leaseRule,
  listedClaimable,
  LONG_MS,
  OWNER_A,
  OWNER_B,
  PAST_MS,
  SHORT_MS,
} from "./lease-checks.js";
import { expectRejects, expectResolves } from "./rule.js";

/** The lease a renewal starts from: shorter than the renewal, longer than the case. */
const FIRST_MS = 10_000;
/** The lease a save renews: short enough to wait half of it. */
const SAVE_RENEW_MS = 1_200;

const refusedRenewal = (args: string, when: string, why: string) =>
  leaseRule(`renew(${args}) ${when}`, `CheckpointConflict: ${why}`);

export const leaseRenewalCases: readonly ConformanceCase[] = [
  {
    name: "only the owner renews a lease, and its renewal extends it",
    async run(h) {
      const runId = h.runId();
      await h.store.save(runId, 0, h.row(runId, 0), { owner: OWNER_A, ms: FIRST_MS });
      const first = await leaseHeldBy(h, runId, OWNER_A, `save(runId, 0) with a ${FIRST_MS} ms lease for A`);
      await expectRejects(
        CheckpointConflict,
        refusedRenewal("runId, 0, B", "while A holds the lease", "only the owner renews"),
        h.store.renew(runId, 0, { owner: OWNER_B, ms: LONG_MS }),
      );
      const kept = await leaseHeldBy(h, runId, OWNER_A, "B's refused renewal");
      expectSameExpiry(
        kept.expiresAt,
        first.expiresAt,
        leaseRule("leaseOf(runId) after B's refused renewal", "A's lease unchanged (ms apart)"),
      );
      const renewed = await expectResolves(
        leaseRule(`renew(runId, 0, A) for ${LONG_MS} ms`, "accepted: A holds the lease"),
        h.store.renew(runId, 0, { owner: OWNER_A, ms: LONG_MS }),
      );
      expect(renewed.owner, leaseRule("renew(runId, 0, A)", "the lease, held by A")).toBe(OWNER_A);
      const after = await leaseHeldBy(h, runId, OWNER_A, "A's renewal");
      expectSameExpiry(
        after.expiresAt,
        renewed.expiresAt,
        leaseRule("leaseOf(runId) after A's renewal", "the expiry renew gave (ms apart)"),
      );
      expect(
        after.expiresAt - after.now > FIRST_MS,
        leaseRule(
          `leaseOf(runId) after renewing a ${FIRST_MS} ms lease for ${LONG_MS} ms`,
          `expiresAt − now more than ${FIRST_MS} ms: the renewal extended it`,
        ),
      ).toBe(true);
    },
  },
  {
    name: "a running save renews its owner's lease once a third of it has passed",
    async run(h) {
      const runId = h.runId();
      await h.store.save(runId, 0, h.row(runId, 0), { owner: OWNER_A, ms: SAVE_RENEW_MS });
      // Past a third of the lease, well short of its end: the worker's lease keeper counts on this save renewing it.
      await sleep(SAVE_RENEW_MS / 2);
      await h.store.save(runId, 1, h.row(runId, 1), { owner: OWNER_A, ms: SAVE_RENEW_MS });
      const after = await leaseHeldBy(h, runId, OWNER_A, "a save half-way through A's lease");
      expect(
        after.expiresAt - after.now > SAVE_RENEW_MS * 0.75,
        leaseRule(
          `leaseOf(runId) after save(runId, 1) by A ${SAVE_RENEW_MS / 2} ms into a ${SAVE_RENEW_MS} ms lease`,
          `expiresAt − now more than ${SAVE_RENEW_MS * 0.75} ms: the save renewed it`,
        ),
      ).toBe(true);
    },
  },
  {
    name: "a lease that ran out is renewed by its owner while nobody claimed the run; a released lease, a paused run and an unknown one are not",
    async run(h) {
      const runId = h.runId();
      await h.store.save(runId, 0, h.row(runId, 0), { owner: OWNER_A, ms: SHORT_MS });
      await sleep(SHORT_MS + PAST_MS);
      await expectResolves(
        leaseRule(
          `renew(runId, 0, A) ${SHORT_MS + PAST_MS} ms after a ${SHORT_MS} ms lease, nobody having claimed the run`,
          "accepted: a lease that ran out is still its owner's",
        ),
        h.store.renew(runId, 0, { owner: OWNER_A, ms: LONG_MS }),
      );
      const held = await leaseHeldBy(h, runId, OWNER_A, "A renewed a lease that ran out");
      await expectLeaseHeld(h, runId, "save(runId, 1) from segment 1 by B after A renewed", held, () =>
        claim(h, runId, 1, 1, { owner: OWNER_B, ms: LONG_MS }),
      );
      await h.store.release(runId, 0, OWNER_A);
      await expectRejects(
        CheckpointConflict,
        refusedRenewal("runId, 0, A", "after A released the lease", "a released lease is nobody's"),
        h.store.renew(runId, 0, { owner: OWNER_A, ms: LONG_MS }),
      );
      await expectNoLease(h, runId, "a renewal of a released lease");

      const paused = h.runId("paused");
      await h.store.save(paused, 0, h.row(paused, 0), { owner: OWNER_A, ms: LONG_MS });
      await h.store.save(paused, 1, h.row(paused, 1, { status: "paused" }), { owner: OWNER_A, ms: LONG_MS });
      await expectRejects(
        CheckpointConflict,
        refusedRenewal("runId, 0, A", "of a paused run", "a paused run holds no lease"),
        h.store.renew(paused, 0, { owner: OWNER_A, ms: LONG_MS }),
      );
      await expectRejects(
        CheckpointNotFound,
        leaseRule("renew(runId, 0, A) of an unknown run", "CheckpointNotFound"),
        h.store.renew(h.runId("unknown"), 0, { owner: OWNER_A, ms: LONG_MS }),
      );
    },
  },
  {
    name: "release makes the run claimable at once; a release by another owner or from an old segment does nothing",
    async run(h) {
      const flow = h.runId("flow");
      const runId = h.runId();
      await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: LONG_MS });
      await claim(h, runId, 1, 1, { owner: OWNER_A, ms: LONG_MS }, { name: flow });
      for (const [operation, segment, owner] of [
        ["release(runId, 1, B) while A holds the lease", 1, OWNER_B],
        ["release(runId, 0, A) after A claimed segment 1", 0, OWNER_A],
      ] as const) {
        await h.store.release(runId, segment, owner);
        await leaseHeldBy(h, runId, OWNER_A, `${operation}, which does nothing`);
        expect(
          await listedClaimable(h, flow, runId),
          leaseRule(`listUnfinished(flow, { claimable: true }) after ${operation}`, "not the run: A still holds it"),
        ).toBe(false);
      }
      await expectResolves(
        leaseRule("release of an unknown run", "nothing done, no error"),
        h.store.release(h.runId("unknown"), 0, OWNER_A),
      );
      await h.store.release(runId, 1, OWNER_A);
      await expectNoLease(h, runId, "release(runId, 1, A)");
      expect(
        await listedClaimable(h, flow, runId),
        leaseRule("listUnfinished(flow, { claimable: true }) right after A released", "the run's id"),
      ).toBe(true);
      await expectResolves(
        leaseRule(
          "save(runId, 2) from segment 2 by B right after A released",
          "accepted: the run is claimable at once",
        ),
        claim(h, runId, 2, 2, { owner: OWNER_B, ms: LONG_MS }, { name: flow }),
      );
      await leaseHeldBy(h, runId, OWNER_B, "B's claim of the released run");
    },
  },
  {
    name: "paused, done and failed saves release the lease, and so does a save without one or of length 0",
    async run(h) {
      for (const status of ["paused", "done", "failed"] as const) {
        const runId = h.runId(status);
        await h.store.save(runId, 0, h.row(runId, 0), { owner: OWNER_A, ms: LONG_MS });
        await h.store.save(runId, 1, h.row(runId, 1, { status }), { owner: OWNER_A, ms: LONG_MS });
        await expectNoLease(h, runId, `a ${status} save(runId, 1) by A with a lease`);
        if (status !== "paused") continue;
        await expectResolves(
          leaseRule("save(runId, 2) from segment 1 by B (a resume) of a paused run", "accepted: it holds no lease"),
          claim(h, runId, 2, 1, { owner: OWNER_B, ms: LONG_MS }),
        );
      }
      const flow = h.runId("flow");
      for (const [how, lease] of [
        ["no lease", undefined],
        ["a lease of 0 ms", { owner: OWNER_A, ms: 0 }],
      ] as const) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: LONG_MS });
        await h.store.save(runId, 1, h.row(runId, 1, { name: flow }), lease);
        await expectNoLease(h, runId, `a running save(runId, 1) with ${how}`);
        expect(
          await listedClaimable(h, flow, runId),
          leaseRule(`listUnfinished(flow, { claimable: true }) after a save with ${how}`, "the run's id"),
        ).toBe(true);
        await expectResolves(
          leaseRule(`save(runId, 2) from segment 1 by B after a save with ${how}`, "accepted: the run holds no lease"),
          claim(h, runId, 2, 1, { owner: OWNER_B, ms: LONG_MS }, { name: flow }),
        );
      }
      const unleased = h.runId("unleased");
      await h.store.save(unleased, 0, h.row(unleased, 0));
      await expectNoLease(h, unleased, "save(runId, 0) with no lease");
    },
  },
];
