import { describe, expect, it } from "vitest";
import type { CallWitness } from "../src/process/acknowledgments.js";
import { NOTHING_ISSUED, callVerdict, type CallObservation } from "../src/cases/crash-verdict.js";

// The crash group's verdict on one call, on observations made by hand: what the tools did (before and after the
// crash, by attempt), what the killed worker was told (the witness) and what recovery reported.
const startedAcked: CallWitness = { ...NOTHING_ISSUED, lastStarted: 1, startedAckedLast: true };
const doneAcked: CallWitness = { ...startedAcked, startedAckedLast: false, doneAcked: true };

const charge = (seen: Partial<CallObservation>): CallObservation => ({
  tool: "charge",
  attempts: 1,
  before: new Map(),
  after: new Map(),
  witness: NOTHING_ISSUED,
  tries: 1,
  reports: 0,
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

    it("refuses a call that ran more than once more than it was reported", () => {
      const seen = charge({
        before: ran(1),
        after: ran(3),
        witness: startedAcked,
        tries: 2,
        reports: 1,
        decided: true,
      });
      expect(callVerdict(seen)).toMatch(/ran 3 times after the crash, though the 2 tries/);
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
