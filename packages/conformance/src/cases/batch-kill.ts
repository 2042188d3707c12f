import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DurableRun, readCallLog } from "@durable/core/runner";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase } from "./case.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import { breaks } from "./rule.js";
import { sleep } from "./clock.js";

/** Records per batch: enough that a commit takes a while, so kills land inside some. */
const SIZE = 200;
/** Kills that must land inside a commit (between "committing" and "committed"). */
const INSIDE = 3;
const MAX_TRIALS = 30;

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

export const batchKillCase: ConformanceCase = {
  name: `a process SIGKILLed while it commits batches of ${SIZE} records and a checkpoint leaves whole batches only`,
  skipUnless: needsMultiProcess,
  timeout: 300_000,
  async run(h) {
    const dir = mkdtempSync(join(tmpdir(), "durable-batch-"));
    let inside = 0;
    try {
      for (let trial = 0; trial < MAX_TRIALS && inside < INSIDE; trial++) {
        const runId = h.runId("batch-kill");
        const worker = spawnWorker(
          h.init,
          h.store,
          join(dir, "effects"),
          ["batches", String(SIZE), runId],
          withoutFaultPoint(),
        );
        try {
          // Every other trial as the third batch goes out (a commit of one statement can take a millisecond, and
          // sealing a batch longer than that on a busy machine), the others a moment after the second landed. The
          // verdict below does not depend on where the kill lands.
          if (trial % 2 === 0) await worker.waitFor((line) => line === "committing 3");
          else await worker.waitFor((line) => line === "committed 2");
          await sleep(trial % 7);
          worker.kill();
          await worker.exited();
        } finally {
          worker.kill();
        }
        const last = worker.lines.at(-1) ?? "";
        if (last.startsWith("committing")) inside += 1;
        // The witness outside the store: the last batch the worker printed as acknowledged must be stored.
        const acked = Math.max(
          0,
          ...worker.lines.filter((l) => l.startsWith("committed ")).map((l) => Number(l.slice(10))),
        );
        const { latest, records } = await settledRead(h, runId);
        expect(
          latest.step,
          rule(
            `latest(runId) after the worker printed "committed ${acked}"`,
            `step ${acked} or later: an acknowledged batch stays`,
          ),
        ).toBeGreaterThanOrEqual(acked);
        const operation = `calls(runId) of a run whose writer was SIGKILLed after "${last}"`;
        expect(
          records.length,
          rule(operation, `${SIZE} records per checkpoint: whole batches only (latest step ${latest.step})`),
        ).toBe(latest.step * SIZE);
      }
      expect(
        inside,
        rule(`${MAX_TRIALS} kills of a worker committing batches`, `at least ${INSIDE} inside a commit, to judge it`),
      ).toBeGreaterThanOrEqual(INSIDE);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/**
 * The run's latest checkpoint and its records, read when no write landed between them: a server (PostgreSQL)
 * finishes a commit its SIGKILLed client had sent, a moment after the kill. Read until the latest checkpoint
 * before and after the records is the same one (20 tries at most).
 */
async function settledRead(h: Harness, runId: string, tries = 20) {
  const latest = await DurableRun.latest(h.store, h.sealer, runId);
  const records = await readCallLog(h.store, h.sealer, runId, latest.calls);
  // A store whose latest checkpoint keeps moving with its writer dead is judged on what it said last.
  if (tries === 1 || (await DurableRun.latest(h.store, h.sealer, runId)).step === latest.step)
    return { latest, records };
  await sleep(50);
  return settledRead(h, runId, tries - 1);
}
