import { setImmediate } from "node:timers/promises";
import { CheckpointConflict, CheckpointNotFound, type StoredCall } from "@durable/core/store";
import { expect } from "vitest";
import { needsConnect, type ConformanceGroup } from "./case.js";
import { breaks, expectRejects } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);
const refused = (operation: string) => rule(operation, "CheckpointConflict");
/** The numbering case's segments: past 9, so text order shows. */
const SEGMENTS = 12;
/** Its records per segment: 12 in segment 0 (seqs past 9), one fewer in each next one. */
const recordsIn = (segment: number) => SEGMENTS - segment;

const numbers = (calls: StoredCall[]) => calls.map((c) => [c.segment, c.seq]);

/** Trials of the fencing race, each with the claim one more event-loop turn after the record. */
const RACE_TRIALS = 20;

/** The promise's outcome, without an unhandled rejection while it is not yet awaited. */
function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: "fulfilled", value }),
    (reason: unknown) => ({ status: "rejected", reason }),
  );
}

export const callLogGroup: ConformanceGroup = {
  name: "call-log",
  proves:
    "call records are kept numbered and in order, duplicates and gaps are refused, and a cut-off worker is fenced",
  cases: [
    {
      name: "keeps every record, numbered and in order, across 12 segments and past seq 9, and reads them from any place",
      async run(h) {
        const runId = h.runId();
        // Segments and seqs past 9: a store ordering them as text ("10" before "2"), or by seq first, shows.
        const expected: Array<[number, number]> = [];
        for (let segment = 0; segment < SEGMENTS; segment++) {
          await h.store.save(runId, segment, h.row(runId, segment, { segment }));
          await h.recordCalls(runId, segment, 0, recordsIn(segment));
          for (let seq = 0; seq < recordsIn(segment); seq++) expected.push([segment, seq]);
        }
        const calls = await h.store.calls(runId);
        const operation = `calls(runId) after records in segments 0–${SEGMENTS - 1}, seqs 0–${recordsIn(0) - 1}`;
        expect(
          numbers(calls),
          rule(operation, "every [segment, seq], ordered by segment then seq, as numbers"),
        ).toEqual(expected);
        expect(
          calls.map((c) => c.sealed),
          rule(operation, "each record's sealed text as recorded"),
        ).toEqual(expected.map(([segment, seq]) => h.call(runId, segment, seq)));
        for (const call of calls) expect(call.runId, rule(operation, "the runId on every record")).toBe(runId);
        // A recovery reads from where its round began: every place, mid-segment, a segment's start and past the end.
        for (const from of [
          { segment: 0, seq: 0 },
          { segment: 3, seq: 4 },
          { segment: 10, seq: 11 },
          { segment: 7, seq: 0 },
          { segment: SEGMENTS - 1, seq: recordsIn(SEGMENTS - 1) },
          { segment: SEGMENTS, seq: 0 },
        ]) {
          const ranged = numbers(await h.store.calls(runId, from));
          const after = expected.filter(
            ([segment, seq]) => segment > from.segment || (segment === from.segment && seq >= from.seq),
          );
          // A store may ignore `from` (core drops what comes before it): it then gives every record.
          expect(
            [after, expected],
            rule(
              `calls(runId, ${JSON.stringify(from)})`,
              "the records at or after that place in order (or all of them)",
            ),
          ).toContainEqual(ranged);
        }
      },
    },
    {
      name: "refuses a duplicate number and a gap, and keeps what it had",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.recordCalls(runId, 0, 0, 2);
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, 0, 1) when segment 0 holds seqs 0–1 (a duplicate)"),
          h.store.recordCall(runId, 0, 1, h.call(runId, 0, 1, { callId: "dup" })),
        );
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, 0, 3) when segment 0 holds seqs 0–1 (a gap)"),
          h.store.recordCall(runId, 0, 3, h.call(runId, 0, 3)),
        );
        const calls = await h.store.calls(runId);
        expect(
          calls.map((c) => c.sealed),
          rule("calls(runId) after the refused duplicate and gap", "the two first records only, unchanged"),
        ).toEqual([h.call(runId, 0, 0), h.call(runId, 0, 1)]);
      },
    },
    {
      name: "takes a record resent identical as a no-op or refuses it, and never stores it twice",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.recordCalls(runId, 0, 0, 2);
        // A store may retry a write whose reply was lost: accepting it changes nothing, refusing it is a taken seq.
        for (const seq of [1, 0]) {
          await h.store.recordCall(runId, 0, seq, h.call(runId, 0, seq)).catch((error: unknown) => {
            if (!(error instanceof CheckpointConflict)) throw error;
          });
        }
        expect(
          (await h.store.calls(runId)).map((c) => c.sealed),
          rule("calls(runId) after records 1 and 0 were resent identical", "each record once, in order"),
        ).toEqual([h.call(runId, 0, 0), h.call(runId, 0, 1)]);
        await h.recordCalls(runId, 0, 2, 3);
        expect(
          (await h.store.calls(runId)).map((c) => c.seq),
          rule("calls(runId) after the resends and the next record", "seqs 0, 1, 2"),
        ).toEqual([0, 1, 2]);
        // A cut-off worker's resend is fenced like any of its records: after a claim, and after the run ended.
        await h.store.save(runId, 1, h.row(runId, 1, { segment: 1 }));
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, 0, 2) resent identical after step 1 claimed segment 1"),
          h.store.recordCall(runId, 0, 2, h.call(runId, 0, 2)),
        );
        await h.recordCalls(runId, 1, 0, 1);
        await h.store.save(runId, 2, h.row(runId, 2, { segment: 1, status: "done" }));
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, 1, 0) resent identical after a done step 2"),
          h.store.recordCall(runId, 1, 0, h.call(runId, 1, 0)),
        );
      },
    },
    {
      name: "refuses a record from an older segment after a claim, and one from a segment not yet claimed",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.recordCalls(runId, 0, 0, 2);
        await h.store.save(runId, 1, h.row(runId, 1, { segment: 1 }));
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, segment 0, seq 2) after step 1 claimed segment 1 (a fenced worker)"),
          h.store.recordCall(runId, 0, 2, h.call(runId, 0, 2)),
        );
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, segment 2, seq 0) while the latest checkpoint is of segment 1"),
          h.store.recordCall(runId, 2, 0, h.call(runId, 2, 0)),
        );
        await h.recordCalls(runId, 1, 0, 1);
        expect(
          numbers(await h.store.calls(runId)),
          rule("calls(runId) after the refused records", "[[0, 0], [0, 1], [1, 0]]"),
        ).toEqual([
          [0, 0],
          [0, 1],
          [1, 0],
        ]);
      },
    },
    {
      name: "refuses a record from an older segment when the claim and the record race",
      async run(h) {
        const claimer = h.init.capabilities?.connect === undefined ? h.store : await h.connect();
        // The claim goes out 0, 1, 2, … turns of the event loop after the record: a store that checks the segment
        // and writes the record in two steps (two round trips, an await between) has the claim land in between
        // in some trial, in every run. Whatever the order, a record the store accepts must already be in the log
        // the claimer reads right after its claim (docs/protocol.md, Recovery, step 3).
        for (let trial = 0; trial < RACE_TRIALS; trial++) {
          const runId = h.runId();
          await h.store.save(runId, 0, h.row(runId, 0));
          await h.recordCalls(runId, 0, 0, 2);
          const record = settled(h.store.recordCall(runId, 0, 2, h.call(runId, 0, 2)));
          for (let turn = 0; turn < trial; turn++) await setImmediate();
          await claimer.save(runId, 1, h.row(runId, 1, { segment: 1 }));
          const readAfterClaim = numbers(await claimer.calls(runId));
          const outcome = await record;
          const stored = numbers(await h.store.calls(runId));
          if (outcome.status === "fulfilled") {
            expect(
              readAfterClaim,
              `trial ${trial}: recordCall of segment 0 resolved, but the log read right after the claim of segment 1 did not hold it: the record landed after the claim, so it must be refused with CheckpointConflict (docs/protocol.md, Recovery: the claim fences the cut-off worker; check the segment in the record's own transaction)`,
            ).toEqual([
              [0, 0],
              [0, 1],
              [0, 2],
            ]);
            expect(stored).toEqual([
              [0, 0],
              [0, 1],
              [0, 2],
            ]);
          } else {
            expect(outcome.reason).toBeInstanceOf(CheckpointConflict);
            expect(stored).toEqual([
              [0, 0],
              [0, 1],
            ]);
          }
          const next = stored.length;
          await expect(h.store.recordCall(runId, 0, next, h.call(runId, 0, next))).rejects.toBeInstanceOf(
            CheckpointConflict,
          );
        }
      },
    },
    {
      name: "refuses a record for an unknown run or an ended one",
      async run(h) {
        const unknown = h.runId("unknown");
        await expectRejects(
          CheckpointNotFound,
          rule("recordCall of an unknown run", "CheckpointNotFound"),
          h.store.recordCall(unknown, 0, 0, h.call(unknown, 0, 0)),
        );
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0, { status: "done" }));
        await expectRejects(
          CheckpointConflict,
          refused("recordCall(runId, 0, 0) after a done step 0 (an ended run)"),
          h.store.recordCall(runId, 0, 0, h.call(runId, 0, 0)),
        );
      },
    },
    {
      name: "gives no records for an unknown run",
      async run(h) {
        expect(await h.store.calls(h.runId("unknown")), rule("calls(runId) of an unknown run", "[]")).toEqual([]);
      },
    },
    {
      name: "keeps records and checkpoints through closing and reopening the store",
      skipUnless: needsConnect,
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 1);
        await h.recordCalls(runId, 0, 0, 3);
        await h.reopen();
        const reopened = (operation: string, expected: string) =>
          rule(`${operation} after closing and reopening the store`, expected);
        expect((await h.store.latest(runId)).sealed, reopened("latest(runId)", "step 1's row")).toBe(
          h.row(runId, 1).sealed,
        );
        expect(
          (await h.store.calls(runId)).map((c) => c.sealed),
          reopened("calls(runId)", "the 3 records"),
        ).toEqual([0, 1, 2].map((i) => h.call(runId, 0, i)));
        await h.recordCalls(runId, 0, 3, 4);
      },
    },
  ],
};
