import { CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import type { Harness } from "../harness.js";
import type { ConformanceGroup } from "./case.js";
import { sleep } from "./clock.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

/** Appends records to a running run, one every quarter TTL, until `until`: a live worker's steady writes. */
async function keepRecording(h: Harness, runId: string, ttl: number, until: number): Promise<number> {
  let seq = 0;
  while (Date.now() < until) {
    const operation = `recordCall(runId, 0, ${seq}) of a running run recording every ${ttl / 4} ms and saving nothing`;
    await expectResolves(
      rule(operation, "accepted: each record refreshes the run's TTL"),
      h.store.recordCall(runId, 0, seq, h.call(runId, 0, seq)),
    );
    seq += 1;
    await sleep(Math.min(ttl / 4, Math.max(0, until - Date.now())));
  }
  return seq;
}

async function expectGone(h: Harness, runId: string, what: string): Promise<void> {
  await expectRejects(
    CheckpointNotFound,
    rule(`latest(runId) of ${what}`, "CheckpointNotFound: expired"),
    h.store.latest(runId),
  );
  expect(await h.store.calls(runId), rule(`calls(runId) of ${what}`, "[]: expired with its checkpoints")).toEqual([]);
}

export const ttlGroup: ConformanceGroup = {
  name: "ttl",
  proves:
    "a run's rows expire ttlSeconds after its last write (a checkpoint or a call record), except while it is paused",
  skipUnless: (init) => (init.capabilities?.ttl === undefined ? "the store declares no `ttl` capability" : undefined),
  cases: [
    {
      name: "a finished run's checkpoints and records are gone after the TTL, a recording run's stay, a paused run's stay until it goes on",
      timeout: 120_000,
      async run(h) {
        const ttl = h.init.capabilities!.ttl!.ttlSeconds * 1000;
        // Twice the TTL, plus up to a second for a server that expires by the second.
        const wait = ttl * 2 + Math.min(1000, ttl);
        const [finished, paused, recording] = [h.runId("finished"), h.runId("paused"), h.runId("recording")];
        await h.store.save(finished, 0, h.row(finished, 0));
        await h.recordCalls(finished, 0, 0, 2);
        await h.store.save(finished, 1, h.row(finished, 1, { status: "done" }));
        await h.store.save(paused, 0, h.row(paused, 0));
        await h.recordCalls(paused, 0, 0, 2);
        await h.store.save(paused, 1, h.row(paused, 1, { status: "paused" }));
        await h.store.save(recording, 0, h.row(recording, 0));

        // While the others wait, a running run records a call every quarter TTL and saves nothing.
        const recorded = await keepRecording(h, recording, ttl, Date.now() + wait);
        await expectGone(h, finished, `a done run ${wait} ms after its last write`);
        const aliveAfter = `${wait} ms of records every ${ttl / 4} ms and no save`;
        const alive = rule(
          `latest(runId) of a running run after ${aliveAfter}`,
          "step 0: each record refreshes the run's TTL",
        );
        expect((await expectResolves(alive, h.store.latest(recording))).step, alive).toBe(0);
        expect(
          await h.store.calls(recording),
          rule(`calls(runId) of a running run after ${aliveAfter}`, `all ${recorded} records`),
        ).toHaveLength(recorded);
        const kept = rule(
          `latest(runId) of a paused run ${wait} ms after its last write`,
          "the paused row: a paused run never expires",
        );
        expect((await expectResolves(kept, h.store.latest(paused))).status, kept).toBe("paused");
        expect(
          await h.store.calls(paused),
          rule(
            `calls(runId) of a paused run ${wait} ms after its last write`,
            "its 2 records: a paused run never expires",
          ),
        ).toHaveLength(2);

        // Going on restores the expiry of every key of the run.
        await h.store.save(paused, 2, h.row(paused, 2, { status: "running" }));
        await sleep(wait);
        await expectGone(h, paused, `a resumed run ${wait} ms after it went on`);
        await expectGone(h, recording, `a running run ${wait} ms after its last record`);
      },
    },
  ],
};
