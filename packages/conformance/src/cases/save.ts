import { CheckpointConflict, CheckpointNotFound, type CheckpointStore } from "@durable/core";
import { expect } from "vitest";
import type { Harness } from "../harness.js";
import type { ConformanceGroup } from "./case.js";

/** Expects a save to be refused with `CheckpointConflict` and the latest row to stay as it was. */
async function expectRefused(h: Harness, runId: string, save: () => Promise<void>): Promise<void> {
  const before = await h.store.latest(runId).catch(() => undefined);
  await expect(save()).rejects.toBeInstanceOf(CheckpointConflict);
  const after = await h.store.latest(runId).catch(() => undefined);
  expect(after).toEqual(before);
}

export const saveGroup: ConformanceGroup = {
  name: "save",
  proves: "save is a compare-and-set on the step number: one writer wins each step, ended and foreign runs refuse",
  cases: [
    {
      name: "takes step 0 for a new run and reads back every column",
      async run(h) {
        const runId = h.runId();
        const row = h.row(runId, 0, { status: "paused", segment: 3, flow: "tickets", kind: "loop" });
        await h.store.save(runId, 0, row);
        expect(await h.store.latest(runId)).toEqual({ runId, step: 0, ...row });
      },
    },
    {
      name: "refuses a first step other than 0",
      async run(h) {
        const runId = h.runId();
        await expect(h.store.save(runId, 1, h.row(runId, 1))).rejects.toBeInstanceOf(CheckpointConflict);
        await expect(h.store.latest(runId)).rejects.toBeInstanceOf(CheckpointNotFound);
      },
    },
    {
      name: "takes exactly one past the stored step",
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 3);
        expect((await h.store.latest(runId)).step).toBe(3);
      },
    },
    {
      name: "refuses step 0 again, a skipped step and a step already taken",
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 2);
        await expectRefused(h, runId, () => h.store.save(runId, 0, h.row(runId, 0)));
        await expectRefused(h, runId, () => h.store.save(runId, 4, h.row(runId, 4)));
        await expectRefused(h, runId, () => h.store.save(runId, 2, h.row(runId, 2)));
      },
    },
    ...(["done", "failed"] as const).map((status) => ({
      name: `refuses any save after a ${status} step`,
      async run(h: Harness) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.store.save(runId, 1, h.row(runId, 1, { status }));
        await expectRefused(h, runId, () => h.store.save(runId, 2, h.row(runId, 2)));
      },
    })),
    {
      name: "refuses a save for another flow's or another kind's run",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0, { flow: "tickets" }));
        await expectRefused(h, runId, () => h.store.save(runId, 1, h.row(runId, 1, { flow: "refunds" })));
        await expectRefused(h, runId, () => h.store.save(runId, 1, h.row(runId, 1, { flow: "tickets", kind: "loop" })));
      },
    },
    {
      name: "refuses a save from a segment older than the run's",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.store.save(runId, 1, h.row(runId, 1, { segment: 1 }));
        await expectRefused(h, runId, () => h.store.save(runId, 2, h.row(runId, 2, { segment: 0 })));
      },
    },
    {
      name: "lets exactly one of 8 clients saving the same step at once win",
      async run(h) {
        const clients: CheckpointStore[] = [h.store];
        if (h.init.capabilities?.connect !== undefined) {
          for (let i = 1; i < 8; i++) clients.push(await h.connect());
        }
        for (let trial = 0; trial < 5; trial++) {
          const runId = h.runId();
          await h.store.save(runId, 0, h.row(runId, 0));
          const rows = Array.from({ length: 8 }, (_, i) => h.row(runId, 1, { segment: i, data: { client: i } }));
          const results = await Promise.allSettled(rows.map((row, i) => clients[i % clients.length]!.save(runId, 1, row)));
          const winners = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
          expect(winners).toHaveLength(1);
          for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(CheckpointConflict);
          expect((await h.store.latest(runId)).sealed).toBe(rows[winners[0]!]!.sealed);
        }
      },
    },
  ],
};
