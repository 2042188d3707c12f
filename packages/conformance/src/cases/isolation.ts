import { CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import { unfinished } from "./read.js";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);
const byId = (operation: string, expected: string) => breaks("run-ids-and-names", operation, expected);

/** Run ids that glob patterns, key separators and hash tags could confuse. */
const AWKWARD_IDS = [
  "a",
  "a*",
  "*",
  "a?",
  "a[b]",
  "[",
  "{a}",
  "a}{",
  "a:b",
  ":",
  "a b",
  " ",
  "a\\b",
  "%",
  "a_",
  "ä€😀",
];

export const isolationGroup: ConformanceGroup = {
  name: "isolation",
  proves: "two stores (prefixes, tables or files) see nothing of each other, and no run id reaches another run's rows",
  cases: [
    {
      name: "a second store sees nothing of the first, and changes nothing of it",
      async run(h) {
        const other = await h.otherStore();
        const runId = h.runId();
        const flow = h.runId("flow");
        await h.saveSteps(runId, 1, { name: flow });
        await h.recordCalls(runId, 0, 0, 2);

        await expectRejects(
          CheckpointNotFound,
          rule("latest(runId) on a second store of a run saved in the first", "CheckpointNotFound"),
          other.latest(runId),
        );
        expect(
          await other.calls(runId),
          rule("calls(runId) on a second store of a run recorded in the first", "[]"),
        ).toEqual([]);
        expect(
          await unfinished(other, flow),
          rule("listUnfinished(flow) on a second store of a flow saved in the first", "no id"),
        ).toEqual([]);

        // The same run id in the other store is another run.
        await other.save(runId, 0, h.row(runId, 0, { name: flow, data: { other: true } }));
        await other.recordCall(runId, 0, 0, h.call(runId, 0, 0, { callId: "other" }));
        await other.delete(runId);
        const untouched = rule(
          "latest(runId) after a second store saved and deleted that run id",
          "the first store's step 1",
        );
        expect((await expectResolves(untouched, h.store.latest(runId))).step, untouched).toBe(1);
        expect(
          await h.store.calls(runId),
          rule("calls(runId) after a second store recorded and deleted that run id", "the first store's 2 records"),
        ).toHaveLength(2);
        expect(
          await unfinished(h.store, flow),
          rule("listUnfinished(flow) after a second store deleted that run id", "the first store's run"),
        ).toEqual([runId]);
      },
    },
    {
      name: "run ids holding * ? [ ] { } : spaces and other characters reach no other run",
      async run(h) {
        const flow = h.runId("flow");
        const prefix = h.runId("id");
        const ids = AWKWARD_IDS.map((id) => `${prefix}${id}`);
        for (const runId of ids) {
          await h.store.save(runId, 0, h.row(runId, 0, { name: flow, data: { id: runId } }));
          await h.recordCalls(runId, 0, 0, 1);
        }
        for (const runId of ids) {
          expect(
            (await h.store.latest(runId)).sealed,
            byId(`latest(${JSON.stringify(runId)})`, "the row saved under exactly that id"),
          ).toBe(h.row(runId, 0, { name: flow, data: { id: runId } }).sealed);
          expect(
            (await h.store.calls(runId)).map((c) => c.sealed),
            byId(`calls(${JSON.stringify(runId)})`, "the record of exactly that id"),
          ).toEqual([h.call(runId, 0, 0)]);
        }
        expect(await unfinished(h.store, flow), byId("listUnfinished(flow) over awkward ids", "every id once")).toEqual(
          [...ids].sort(),
        );
        const [first, ...rest] = ids;
        await h.store.delete(first!);
        await h.store.delete(`${prefix}*`);
        for (const runId of rest.filter((id) => id !== `${prefix}*`)) {
          const kept = byId(
            `latest(${JSON.stringify(runId)}) after delete of "<prefix>a" and "<prefix>*"`,
            "step 0: delete removes only the exact id",
          );
          expect((await expectResolves(kept, h.store.latest(runId))).step, kept).toBe(0);
        }
        expect(
          await unfinished(h.store, flow),
          byId('listUnfinished(flow) after delete of "<prefix>a" and "<prefix>*"', "every other id"),
        ).toEqual(rest.filter((id) => id !== `${prefix}*`).sort());
      },
    },
  ],
};
