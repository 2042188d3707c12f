import { describe, expect, it } from "vitest";
import type { CallWitness } from "../src/process/acknowledgments.js";
import { NOTHING_ISSUED, callVerdict, type CallObservation } from "../src/cases/crash-verdict.js";

// The crash group's verdict on one call, on observations made by hand: what the tools did (before and after the
// crash, by attempt), what the killed worker was told (the witness) and what recovery reported.
const startedAcked: CallWitness = { ...NOTHING_ISSUED, lastStarted: 1, startedAckedLast: true };
const doneAcked: CallWitness = { ...startedAcked, startedAckedLast: false, doneAcked: true };

// With one try, every report is its first (crash.ts says so); with more, the first report is unknown unless given.
const charge = (seen: Partial<CallObservation>, tool = "charge"): CallObservation => ({
  tool,
  attempts: 1,
  before: new Map(),
  after: new Map(),
  witness: NOTHING_ISSUED,
  tries: 1,
  reports: 0,
  reportedFirst: (seen.tries ?? 1) === 1 ? (seen.reports ?? 0) > 0 : undefined,
  decided: false,
  ...seen,
});
const ran = (times: number) => new Map([[1, times]]);

describe("the crash verdict on a call", () => {
  it("takes a call in doubt at the crash, reported once and rerun once on the decision", () => {
    const seen = charge({ before: ran(1), after: ran(1), witness: startedAcked, reports: 1, decided: true });
    expect(callVerdict(seen)).toBeUndefined();
  });

  it("refuses a call reported once that ran twice after the crash", () => {
    const seen = charge({ before: ran(1), after: ran(2), witness: startedAcked, reports: 1, decided: true });
    expect(callVerdict(seen)).toMatch(/ran 2 times after the crash/);
  });

  it("refuses a call in doubt at the crash that recovery did not report", () => {
    expect(callVerdict(charge({ before: ran(1), after: ran(1), witness: startedAcked }))).toMatch(/did not report/);
  });

  describe("when the store failed a try of recovery (StoreUnavailable) and recovery tried again", () => {
    it("takes a call reported by both tries and rerun by each", () => {
      const seen = charge({
        before: ran(1),
        after: ran(2),
        witness: startedAcked,
        tries: 2,
        reports: 2,
        decided: true,
      });
      expect(callVerdict(seen)).toBeUndefined();
    });

    it("takes a call the failed try ran without recording it, reported by the next try", () => {
      const seen = charge({ after: ran(2), tries: 2, reports: 1, decided: true });
      expect(callVerdict(seen)).toBeUndefined();
    });

    it("refuses a call that ran more than once in all plus once per report", () => {
      const seen = charge({ after: ran(3), tries: 2, reports: 1, decided: true });
      expect(callVerdict(seen)).toMatch(/ran 3 times \(0 before the crash, 3 after\), though the 2 tries/);
    });

    it("refuses a call in doubt at the crash run again without a report: a store that lost its `started`", () => {
      // Killed after its `started` was acknowledged, before the tool. The first try found no record and ran it; its
      // `done` failed; the second try found the `started`, reported it and reran it.
      const seen = charge({ after: ran(2), witness: startedAcked, tries: 2, reports: 1, decided: true });
      expect(callVerdict(seen)).toMatch(/in doubt at the crash and ran 2 times after it/);
      // Had the tool run before the kill, that is one run too many in all.
      expect(callVerdict({ ...seen, before: ran(1) })).toMatch(/ran 3 times \(1 before the crash, 2 after\)/);
    });

    it("refuses a first report, made before recovery wrote, of a call the killed worker never started", () => {
      const seen = charge({ after: ran(1), tries: 2, reports: 1, reportedFirst: true, decided: true });
      expect(callVerdict(seen)).toMatch(/never issued its `started` record/);
    });

    it("refuses a first report, made before recovery wrote, that left out a call in doubt at the crash", () => {
      const seen = charge({
        before: ran(1),
        after: ran(1),
        witness: startedAcked,
        tries: 2,
        reports: 1,
        reportedFirst: false,
        decided: true,
      });
      expect(callVerdict(seen)).toMatch(/did not first report it in doubt/);
    });

    it("takes an idempotent call rerun silently once per try, and no more", () => {
      expect(callVerdict(charge({ before: ran(1), after: ran(2), tries: 2 }, "audit"))).toBeUndefined();
      expect(callVerdict(charge({ before: ran(1), after: ran(3), tries: 2 }, "audit"))).toMatch(
        /more than the 2 tries/,
      );
    });

    it("refuses a non-idempotent call never reported that ran twice", () => {
      expect(callVerdict(charge({ after: ran(2), tries: 3 }))).toMatch(/ran 2 times/);
    });

    it("still refuses a call whose `done` the store acknowledged before the crash that ran again", () => {
      const seen = charge({ before: ran(1), after: ran(1), witness: doneAcked, tries: 2 });
      expect(callVerdict(seen)).toMatch(/acknowledged its `done` record/);
    });

    it("still refuses an attempt whose `failed` the store acknowledged that ran again", () => {
      const witness: CallWitness = { ...NOTHING_ISSUED, lastStarted: 1, failedAcked: new Set([1]), failedAckedLast: 1 };
      const seen = charge({
        attempts: 2,
        before: ran(1),
        after: new Map([
          [1, 1],
          [2, 1],
        ]),
        witness,
        tries: 2,
      });
      expect(callVerdict(seen)).toMatch(/attempt 1 ran again after the crash/);
    });
  });
});
