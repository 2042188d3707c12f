import { CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceGroup } from "./case.js";
import { sleep } from "./clock.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

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
    "a run that ended (done or failed) expires ttlSeconds after its last write; a running or paused run never does, so a crashed run keeps the evidence of its calls in doubt",
  skipUnless: (init) => (init.capabilities?.ttl === undefined ? "the store declares no `ttl` capability" : undefined),
  cases: [
    {
      name: "an ended run's checkpoints and records are gone after the TTL; a running run's (its worker died mid-call) and a paused run's stay, until each ends",
      timeout: 120_000,
      async run(h) {
        const ttl = h.init.capabilities!.ttl!.ttlSeconds * 1000;
        // Twice the TTL, plus up to a second for a server that expires by the second.
        const wait = ttl * 2 + Math.min(1000, ttl);
        const [done, failed, crashed, paused] = [
          h.runId("done"),
          h.runId("failed"),
          h.runId("crashed"),
          h.runId("paused"),
        ];
        for (const [runId, status] of [
          [done, "done"],
          [failed, "failed"],
          [crashed, "running"],
          [paused, "paused"],
        ] as const) {
          await h.store.save(runId, 0, h.row(runId, 0));
          // A call started and never finished: in doubt, as a worker killed inside its tool leaves it.
          await h.recordCalls(runId, 0, 0, 2);
          await h.store.save(runId, 1, h.row(runId, 1, { status, calls: [2] }));
        }
        await sleep(wait);
        await expectGone(h, done, `a done run ${wait} ms after its last write`);
        await expectGone(h, failed, `a failed run ${wait} ms after its last write`);
        for (const [runId, status] of [
          [crashed, "running"],
          [paused, "paused"],
        ] as const) {
          const kept = rule(
            `latest(runId) of a ${status} run ${wait} ms after its last write`,
            `the ${status} row: an unfinished run never expires`,
          );
          expect((await expectResolves(kept, h.store.latest(runId))).status, kept).toBe(status);
          expect(
            await h.store.calls(runId),
            rule(
              `calls(runId) of a ${status} run ${wait} ms after its last write`,
              "its 2 records: the evidence of its call in doubt stays",
            ),
          ).toHaveLength(2);
        }

        // Once each ends, its rows expire.
        await h.store.save(crashed, 2, h.row(crashed, 2, { status: "done", calls: [2] }));
        await h.store.save(paused, 2, h.row(paused, 2, { status: "failed", calls: [2] }));
        await sleep(wait);
        await expectGone(h, crashed, `a recovered run ${wait} ms after it ended`);
        await expectGone(h, paused, `a resumed run ${wait} ms after it ended`);
      },
    },
  ],
};
