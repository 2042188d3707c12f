import { CheckpointStoreCorrupt } from "@durable/core";
import { DurableRun, readCallLog } from "@durable/core/runner";
import type { Harness } from "../harness/harness.js";
import type { ConformanceGroup } from "./case.js";
import { malformedRowCases } from "./malformed.js";
import { breaks, expectRejects } from "./rule.js";

/** What a read through core must say of the stored bytes a case changed. */
const corrupt = (read: string, change: string) =>
  breaks(
    "what-each-read-verifies",
    `${read} after ${change} past the store's API`,
    "CheckpointStoreCorrupt (the store must keep the bytes as given)",
  );

/** At most this many positions of a row are flipped, spread evenly: enough to cover every field. */
const MAX_FLIPS = 400;

function positions(length: number): number[] {
  const step = Math.max(1, Math.ceil(length / MAX_FLIPS));
  return Array.from({ length: Math.ceil(length / step) }, (_, i) => i * step);
}

function flip(text: string, at: number): string {
  return text.slice(0, at) + String.fromCharCode(text.charCodeAt(at) ^ 1) + text.slice(at + 1);
}

const readLatest = (h: Harness, runId: string) => DurableRun.latest(h.store, h.sealer, runId);
const readLog = async (h: Harness, runId: string) =>
  readCallLog(h.store, h.sealer, runId, (await readLatest(h, runId)).calls);

/** A run with steps 0–2 and three call records, the last checkpoint counting them. */
async function runWithLog(h: Harness): Promise<string> {
  const runId = h.runId();
  await h.store.save(runId, 0, h.row(runId, 0));
  await h.recordCalls(runId, 0, 0, 3);
  await h.store.save(runId, 1, h.row(runId, 1, { calls: [3] }));
  await h.store.save(runId, 2, h.row(runId, 2, { calls: [3] }));
  await readLog(h, runId); // intact, it reads
  return runId;
}

export const integrityGroup: ConformanceGroup = {
  name: "integrity",
  proves:
    "whatever is changed, swapped, deleted or put back in the stored bytes, a read through core is CheckpointStoreCorrupt; a row of a shape no save writes (a checkpoint, a call record, the store's head of a run) is CheckpointStoreCorrupt naming the run from the store itself",
  skipUnless: (init) =>
    init.raw === undefined ? "the initializer gives no `raw` oracle to change stored bytes" : undefined,
  cases: [
    {
      name: "flipping any byte of a checkpoint row",
      timeout: 120_000,
      async run(h) {
        const runId = await runWithLog(h);
        const original = await h.raw.readCheckpoint(runId, 2);
        for (const at of positions(original.length)) {
          await h.raw.writeCheckpoint(runId, 2, flip(original, at));
          await expectRejects(
            CheckpointStoreCorrupt,
            corrupt("DurableRun.latest", `flipping byte ${at} of the latest checkpoint row`),
            readLatest(h, runId),
          );
        }
        await h.raw.writeCheckpoint(runId, 2, original);
        await readLatest(h, runId);
      },
    },
    {
      name: "flipping any byte of a call record",
      timeout: 120_000,
      async run(h) {
        const runId = await runWithLog(h);
        const original = await h.raw.readCall(runId, 0, 1);
        for (const at of positions(original.length)) {
          await h.raw.writeCall(runId, 0, 1, flip(original, at));
          await expectRejects(
            CheckpointStoreCorrupt,
            corrupt("readCallLog", `flipping byte ${at} of call record 0/1`),
            readLog(h, runId),
          );
        }
      },
    },
    {
      name: "swapping checkpoint rows between runs",
      async run(h) {
        const [a, b] = [await runWithLog(h), await runWithLog(h)];
        const [rowA, rowB] = [await h.raw.readCheckpoint(a, 2), await h.raw.readCheckpoint(b, 2)];
        await h.raw.writeCheckpoint(a, 2, rowB);
        await h.raw.writeCheckpoint(b, 2, rowA);
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("DurableRun.latest", "swapping checkpoint rows between two runs"),
          readLatest(h, a),
        );
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("DurableRun.latest", "swapping checkpoint rows between two runs"),
          readLatest(h, b),
        );
      },
    },
    {
      name: "swapping call records between runs",
      async run(h) {
        const [a, b] = [await runWithLog(h), await runWithLog(h)];
        await h.raw.writeCall(a, 0, 1, await h.raw.readCall(b, 0, 1));
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("readCallLog", "swapping call records between runs"),
          readLog(h, a),
        );
      },
    },
    {
      name: "swapping two call records of one run",
      async run(h) {
        const runId = await runWithLog(h);
        const [first, second] = [await h.raw.readCall(runId, 0, 0), await h.raw.readCall(runId, 0, 1)];
        await h.raw.writeCall(runId, 0, 0, second);
        await h.raw.writeCall(runId, 0, 1, first);
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("readCallLog", "swapping two call records of one run"),
          readLog(h, runId),
        );
      },
    },
    {
      name: "deleting a middle call record",
      async run(h) {
        const runId = await runWithLog(h);
        await h.raw.deleteCall(runId, 0, 1);
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("readCallLog", "deleting a middle call record"),
          readLog(h, runId),
        );
      },
    },
    {
      name: "deleting the last call record that a checkpoint counts",
      async run(h) {
        const runId = await runWithLog(h);
        await h.raw.deleteCall(runId, 0, 2);
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("readCallLog", "deleting the last counted call record"),
          readLog(h, runId),
        );
      },
    },
    {
      name: "putting back an older checkpoint row",
      async run(h) {
        const runId = await runWithLog(h);
        await h.raw.writeCheckpoint(runId, 2, await h.raw.readCheckpoint(runId, 1));
        await expectRejects(
          CheckpointStoreCorrupt,
          corrupt("DurableRun.latest", "putting back an older checkpoint row"),
          readLatest(h, runId),
        );
      },
    },
    ...malformedRowCases,
  ],
};
