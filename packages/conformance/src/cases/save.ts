import { CheckpointConflict, CheckpointNotFound, type CheckpointStore } from "@durable/core";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const saveRule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

const refusal = (operation: string) =>
  breaks("the-store-rules", operation, "CheckpointConflict, and the latest row unchanged");

/** Expects a save to be refused with `CheckpointConflict` and the latest row to stay as it was. */
async function expectRefused(h: Harness, runId: string, operation: string, save: () => Promise<void>): Promise<void> {
  const before = await h.store.latest(runId).catch(() => undefined);
  await expectRejects(CheckpointConflict, refusal(operation), save());
  const after = await h.store.latest(runId).catch(() => undefined);
  expect(after, refusal(`latest(runId) after the refused ${operation}`)).toEqual(before);
}

export const saveGroup: ConformanceGroup = {
  name: "save",
  proves:
    "save is a compare-and-set on the step number: one writer wins each step, ended and foreign runs refuse (a failed run takes a claim: a retry)",
  cases: [
    {
      name: "takes step 0 for a new run and reads back every column",
      async run(h) {
        const runId = h.runId();
        const row = h.row(runId, 0, { status: "paused", segment: 3, name: "tickets", kind: "loop" });
        await h.store.save(runId, 0, row);
        expect(
          await h.store.latest(runId),
          breaks(
            "the-store-rules",
            "latest(runId) after save(runId, 0, row)",
            "every column of the row saved, with runId and step 0",
          ),
        ).toEqual({ runId, step: 0, ...row });
      },
    },
    {
      name: "refuses a first step other than 0",
      async run(h) {
        const runId = h.runId();
        await expectRejects(
          CheckpointConflict,
          refusal("save(runId, 1) of a new run"),
          h.store.save(runId, 1, h.row(runId, 1)),
        );
        await expectRejects(
          CheckpointNotFound,
          breaks("the-store-rules", "latest(runId) after the refused save", "CheckpointNotFound"),
          h.store.latest(runId),
        );
      },
    },
    {
      name: "takes exactly one past the stored step",
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 3);
        expect(
          (await h.store.latest(runId)).step,
          breaks("the-store-rules", "latest(runId) after saving steps 0–3", "step 3"),
        ).toBe(3);
      },
    },
    {
      name: "refuses step 0 again, a skipped step and a step already taken",
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 2);
        await expectRefused(h, runId, "save(runId, 0) of a run at step 2", () =>
          h.store.save(runId, 0, h.row(runId, 0)),
        );
        await expectRefused(h, runId, "save(runId, 4) of a run at step 2 (a skipped step)", () =>
          h.store.save(runId, 4, h.row(runId, 4)),
        );
        await expectRefused(h, runId, "save(runId, 2) of a run at step 2 (a step already taken)", () =>
          h.store.save(runId, 2, h.row(runId, 2)),
        );
      },
    },
    ...(["done", "failed"] as const).map((status) => ({
      name: `refuses any save after a ${status} step`,
      async run(h: Harness) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.store.save(runId, 1, h.row(runId, 1, { status }));
        await expectRefused(h, runId, `save(runId, 2) after a ${status} step 1 (an ended run)`, () =>
          h.store.save(runId, 2, h.row(runId, 2)),
        );
      },
    })),
    {
      name: "a claim (a raised segment) of a failed run is accepted, as a retry; of a done run refused",
      async run(h: Harness) {
        const failed = h.runId("failed");
        await h.store.save(failed, 0, h.row(failed, 0));
        await h.store.save(failed, 1, h.row(failed, 1, { status: "failed" }));
        await expectResolves(
          saveRule("save(runId, 2) from segment 1 after a failed step 1 (a retry)", "accepted"),
          h.store.save(failed, 2, h.row(failed, 2, { segment: 1 })),
        );
        expect(
          (await h.store.latest(failed)).status,
          saveRule("latest(runId) after the retry's claim", "running"),
        ).toBe("running");
        const done = h.runId("done");
        await h.store.save(done, 0, h.row(done, 0));
        await h.store.save(done, 1, h.row(done, 1, { status: "done" }));
        await expectRefused(h, done, "save(runId, 2) from segment 1 after a done step 1", () =>
          h.store.save(done, 2, h.row(done, 2, { segment: 1 })),
        );
      },
    },
    {
      name: "refuses a save for another flow's or another kind's run",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0, { name: "tickets" }));
        await expectRefused(h, runId, 'save(runId, 1) of flow "refunds" on a run of flow "tickets"', () =>
          h.store.save(runId, 1, h.row(runId, 1, { name: "refunds" })),
        );
        await expectRefused(h, runId, 'save(runId, 1) of kind "loop" on a run of kind "flow"', () =>
          h.store.save(runId, 1, h.row(runId, 1, { name: "tickets", kind: "loop" })),
        );
      },
    },
    {
      name: "refuses a save from a segment older than the run's",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.store.save(runId, 1, h.row(runId, 1, { segment: 1 }));
        await expectRefused(h, runId, "save(runId, 2) from segment 0 after step 1 claimed segment 1", () =>
          h.store.save(runId, 2, h.row(runId, 2, { segment: 0 })),
        );
      },
    },
    {
      name: "lets exactly one of 8 clients saving the same step at once win",
      async run(h) {
        const clients: CheckpointStore[] = [h.store];
        if (h.init.capabilities?.connect !== undefined) {
          for (let i = 1; i < 8; i++) clients.push(await h.connect());
        }
        const operation = "8 concurrent save(runId, 1) of a run at step 0";
        for (let trial = 0; trial < 5; trial++) {
          const runId = h.runId();
          await h.store.save(runId, 0, h.row(runId, 0));
          const rows = Array.from({ length: 8 }, (_, i) => h.row(runId, 1, { segment: i, data: { client: i } }));
          const results = await Promise.allSettled(
            rows.map((row, i) => clients[i % clients.length]!.save(runId, 1, row)),
          );
          const winners = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
          expect(
            winners,
            breaks("the-store-rules", operation, "exactly one to resolve (the clients that won listed)"),
          ).toHaveLength(1);
          for (const r of results) {
            if (r.status === "rejected")
              expect(r.reason, refusal(`each losing save of ${operation}`)).toBeInstanceOf(CheckpointConflict);
          }
          expect(
            (await h.store.latest(runId)).sealed,
            breaks("the-store-rules", `latest(runId) after ${operation}`, "the winner's row"),
          ).toBe(rows[winners[0]!]!.sealed);
        }
      },
    },
  ],
};
