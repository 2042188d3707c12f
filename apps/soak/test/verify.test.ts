import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readLedger } from "../src/ledger.js";
import type { Death } from "../src/slot.js";
import { failoverViolations as judged } from "../src/verify.js";

const dir = mkdtempSync(join(tmpdir(), "soak-verify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The ledger of `lines` as the verdict reads it. */
function ledger(...lines: string[]) {
  const path = join(dir, `ledger-${++files}`);
  writeFileSync(path, `${lines.join("\n")}\n`);
  return readLedger(path);
}

/** The violations the verdict finds with 2 s leases. */
const failoverViolations = (entries: ReturnType<typeof ledger>, deaths: Death[], inDoubtOnlyAfterDeaths: boolean) =>
  judged(entries, deaths, LEASE_MS, inDoubtOnlyAfterDeaths).violations;
const LEASE_MS = 2_000;

const PAY = "2:pay:charge_card:abc:0";
const started = (exec: string, worker: number, at: number) => `S ${exec} ${worker} ${at} r1 ${PAY} charge_card key`;
const kill = (worker: number, at: number): Death => ({
  worker: String(worker),
  signal: "SIGKILL",
  signalledAt: at,
  diedAt: at + 5,
});
const term = (worker: number, at: number, diedAt: number): Death => ({
  worker: String(worker),
  signal: "SIGTERM",
  signalledAt: at,
  diedAt,
});

describe("the failover verdict reads the ledger against the deaths", () => {
  it("finds two live workers in one run's tool at once: a claim of a live lease", () => {
    const found = failoverViolations(ledger(started("1.1", 1, 100), started("2.1", 2, 150), "E 1.1 1 300"), [], true);
    expect(found).toEqual([
      expect.stringMatching(/r1: charge_card began in worker 2 while .* worker 1 \(150 ms overlap\)/),
    ]);
  });

  it("allows the overlap once the first worker was SIGKILLed, or had given its runs up, before the second began", () => {
    expect(failoverViolations(ledger(started("1.1", 1, 100), started("2.1", 2, 2_500)), [kill(1, 400)], true)).toEqual(
      [],
    );
    const givenUp = ledger(started("1.1", 1, 100), "G 1 500", started("2.1", 2, 520), "E 1.1 1 700");
    expect(failoverViolations(givenUp, [term(1, 0, 800)], true)).toEqual([]);
    // A worker that drained (no give-up) holds its runs until it exits.
    const drained = ledger(started("1.1", 1, 100), started("2.1", 2, 520), "E 1.1 1 700");
    expect(failoverViolations(drained, [term(1, 0, 800)], true)).toHaveLength(1);
  });

  it("counts every claim with takeOver as a violation", () => {
    expect(failoverViolations(ledger("T 1 100 r1"), [], true)).toEqual(["1 claims took a live lease over (takeOver)"]);
  });

  it("explains a call in doubt only by the death of the last worker that touched the run", () => {
    const afterKill = ledger("C 1 50 r1", started("1.1", 1, 100), `D 2 2600 r1 ${PAY}:charge_card`);
    expect(afterKill.inDoubt).toEqual([
      { worker: "2", at: 2600, runId: "r1", calls: [{ callId: PAY, tool: "charge_card" }] },
    ]);
    expect(failoverViolations(afterKill, [kill(1, 400)], true)).toEqual([]);
    // Worker 1 died, but worker 3 claimed the run after it and lives: its call cannot be in doubt.
    const liveClaim = ledger("C 1 50 r1", started("1.1", 1, 100), "C 3 2500 r1", `D 2 2600 r1 ${PAY}:charge_card`);
    expect(failoverViolations(liveClaim, [kill(1, 400)], true)).toEqual([
      expect.stringMatching(/r1 was found in doubt at 2600, but worker 3, .* was never killed/),
    ]);
    // A claim that ran the call again as in doubt (after a decision) is held to the same.
    const liveRerun = ledger("C 1 50 r1", started("1.1", 1, 100), "C 3 2500 r1", `X 2 2600 r1 ${PAY}:charge_card`);
    expect(liveRerun.reruns).toHaveLength(1);
    expect(failoverViolations(liveRerun, [kill(1, 400)], true)).toHaveLength(1);
    // A claim right after one that found the run in doubt (a decision's claim) finds what that one found, even
    // when the worker that made both holds the lease: worker 2's drive starved past its lease, its next one found it.
    const decided = ledger(
      "C 2 50 r1",
      "K 2 50 60 r1 save accepted",
      started("2.1", 2, 100),
      `D 2 2600 r1 ${PAY}:charge_card`,
      "K 2 2600 2610 r1 save accepted",
      `X 2 2700 r1 ${PAY}:charge_card`,
    );
    expect(failoverViolations(decided, [], true)).toEqual([]);
    // Under server faults a live worker leaves calls in doubt: not asked.
    expect(failoverViolations(liveClaim, [kill(1, 400)], false)).toEqual([]);
  });

  it("judges a live worker's lease by the store's clock: ran out a whole lease after its last answered write that set it, the run may be taken", () => {
    // Worker 1 claimed at 50 (answered at 60), began the charge at 100, then starved: no write for 5 s.
    const starved = ["C 1 50 r1", "K 1 50 60 r1 save accepted", started("1.1", 1, 100)];
    const takenAt = (at: number, ...more: string[]) =>
      ledger(...starved, ...more, `C 2 ${at} r1`, `D 2 ${at} r1 ${PAY}:charge_card`, started("2.1", 2, at + 100));
    expect(judged(takenAt(2_100), [], LEASE_MS, true)).toEqual({ violations: [], lapsedLeases: 1 });
    // A renewal sent at 1000 and answered at 1010 kept the lease live until 3010: a claim at 2100 took a live lease.
    expect(failoverViolations(takenAt(2_100, "K 1 1000 1010 r1 renew accepted"), [], true)).toEqual([
      expect.stringMatching(/r1: charge_card began in worker 2 while .* live worker 1/),
      expect.stringMatching(/r1 was found in doubt at 2100, but worker 1, .* was never killed, and its lease was live/),
    ]);
    // One whose answer came late set the lease no earlier than it was sent: a claim sent before that lease ran out
    // took a live lease; one sent after it may have run out (set early, answered late) is not judged live.
    expect(failoverViolations(takenAt(2_900, "K 1 1000 1900 r1 renew accepted"), [], true)).toHaveLength(2);
    expect(failoverViolations(takenAt(3_100, "K 1 1000 1900 r1 renew accepted"), [], true)).toEqual([]);
    // A refused one set nothing; one left unanswered may or may not have: the verdict goes by what it knows.
    expect(failoverViolations(takenAt(2_100, "K 1 1000 1010 r1 renew refused"), [], true)).toEqual([]);
    expect(failoverViolations(takenAt(2_100, "K 1 1000 4000 r1 renew unanswered"), [], true)).toEqual([]);
    // A save less than a third of the lease after the claim leaves the lease as it was; one after a third renews it.
    expect(failoverViolations(takenAt(2_100, "K 1 500 520 r1 save accepted"), [], true)).toEqual([]);
    expect(failoverViolations(takenAt(2_100, "K 1 800 820 r1 save accepted"), [], true)).toHaveLength(2);
    // One sent before a third had passed and answered after may or may not have renewed it: a claim the store
    // accepted after the lease it surely set ran out is not judged live (a loaded PostgreSQL answered 700 ms late).
    expect(judged(takenAt(2_100, "K 1 600 800 r1 save accepted"), [], LEASE_MS, true)).toEqual({
      violations: [],
      lapsedLeases: 1,
    });
  });
});
