import { CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import { unfinished } from "./read.js";
import type { ConformanceGroup } from "./case.js";

/** Run ids that glob patterns, key separators and hash tags could confuse. */
const AWKWARD_IDS = ["a", "a*", "*", "a?", "a[b]", "[", "{a}", "a}{", "a:b", ":", "a b", " ", "a\\b", "%", "a_", "ä€😀"];

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
        await h.saveSteps(runId, 1, { flow });
        await h.recordCalls(runId, 0, 0, 2);

        await expect(other.latest(runId)).rejects.toBeInstanceOf(CheckpointNotFound);
        expect(await other.calls(runId)).toEqual([]);
        expect(await unfinished(other, flow)).toEqual([]);

        // The same run id in the other store is another run.
        await other.save(runId, 0, h.row(runId, 0, { flow, data: { other: true } }));
        await other.recordCall(runId, 0, 0, h.call(runId, 0, 0, { callId: "other" }));
        await other.delete(runId);
        expect((await h.store.latest(runId)).step).toBe(1);
        expect(await h.store.calls(runId)).toHaveLength(2);
        expect(await unfinished(h.store, flow)).toEqual([runId]);
      },
    },
    {
      name: "run ids holding * ? [ ] { } : spaces and other characters reach no other run",
      async run(h) {
        const flow = h.runId("flow");
        const prefix = h.runId("id");
        const ids = AWKWARD_IDS.map((id) => `${prefix}${id}`);
        for (const runId of ids) {
          await h.store.save(runId, 0, h.row(runId, 0, { flow, data: { id: runId } }));
          await h.recordCalls(runId, 0, 0, 1);
        }
        for (const runId of ids) {
          expect((await h.store.latest(runId)).sealed).toBe(h.row(runId, 0, { flow, data: { id: runId } }).sealed);
          expect((await h.store.calls(runId)).map((c) => c.sealed)).toEqual([h.call(runId, 0, 0)]);
        }
        expect(await unfinished(h.store, flow)).toEqual([...ids].sort());
        const [first, ...rest] = ids;
        await h.store.delete(first!);
        await h.store.delete(`${prefix}*`);
        for (const runId of rest.filter((id) => id !== `${prefix}*`)) expect((await h.store.latest(runId)).step).toBe(0);
        expect(await unfinished(h.store, flow)).toEqual(rest.filter((id) => id !== `${prefix}*`).sort());
      },
    },
  ],
};
