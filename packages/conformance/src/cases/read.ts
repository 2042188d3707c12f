import { CheckpointNotFound, type CheckpointStore } from "@durable/core";
import { expect } from "vitest";
import type { ConformanceGroup } from "./case.js";

/** Every id of `listUnfinished`, sorted. */
export async function unfinished(store: CheckpointStore, flow: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(flow)) ids.push(id);
  return ids.sort();
}

export const readGroup: ConformanceGroup = {
  name: "read",
  proves: "latest, listUnfinished and delete read and remove exactly the rows they name",
  cases: [
    {
      name: "latest gives the row of the highest step",
      async run(h) {
        const runId = h.runId();
        await h.saveSteps(runId, 4);
        const latest = await h.store.latest(runId);
        expect(latest).toEqual({ runId, step: 4, ...h.row(runId, 4) });
      },
    },
    {
      name: "run ids and flow names of any well-formed text round-trip: characters beyond the BMP, accents, case and spaces, each its own run",
      async run(h) {
        const base = h.runId("text");
        const flow = `${h.runId("flow")} 🎟 Ünïcode`;
        // Ids that a store folding case, normalising, or storing UTF-16 halves would confuse.
        const ids = [`${base} 🎟`, `${base} 🎫`, `${base} \u00c9`, `${base} E\u0301`, `${base} \u00e9`, `${base}  `, `${base} 北京`];
        for (const runId of ids) await h.store.save(runId, 0, h.row(runId, 0, { flow, data: { runId } }));
        for (const runId of ids) expect(await h.store.latest(runId)).toEqual({ runId, step: 0, ...h.row(runId, 0, { flow, data: { runId } }) });
        expect(await unfinished(h.store, flow)).toEqual([...ids].sort());
      },
    },
    {
      name: "an unknown run is CheckpointNotFound",
      async run(h) {
        const error = await h.store.latest(h.runId("unknown")).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(CheckpointNotFound);
        expect((error as CheckpointNotFound).code).toBe("CHECKPOINT_NOT_FOUND");
      },
    },
    {
      name: "listUnfinished gives the running and paused runs of that flow only, each once",
      async run(h) {
        const flow = h.runId("flow");
        const ids = { running: h.runId("running"), paused: h.runId("paused"), done: h.runId("done"), failed: h.runId("failed") };
        for (const [status, runId] of Object.entries(ids)) {
          await h.store.save(runId, 0, h.row(runId, 0, { flow }));
          await h.store.save(runId, 1, h.row(runId, 1, { flow, status: status as "running" }));
        }
        const other = h.runId("other-flow");
        await h.store.save(other, 0, h.row(other, 0, { flow: `${flow}-other` }));
        expect(await unfinished(h.store, flow)).toEqual([ids.running, ids.paused].sort());
      },
    },
    {
      name: "listUnfinished follows a run's latest status",
      async run(h) {
        const flow = h.runId("flow");
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0, { flow, status: "paused" }));
        expect(await unfinished(h.store, flow)).toEqual([runId]);
        await h.store.save(runId, 1, h.row(runId, 1, { flow, status: "running" }));
        expect(await unfinished(h.store, flow)).toEqual([runId]);
        await h.store.save(runId, 2, h.row(runId, 2, { flow, status: "done" }));
        expect(await unfinished(h.store, flow)).toEqual([]);
      },
    },
    {
      name: "delete removes the run's checkpoints and call records and touches no other run",
      async run(h) {
        const flow = h.runId("flow");
        const [gone, kept] = [h.runId("gone"), h.runId("kept")];
        for (const runId of [gone, kept]) {
          await h.saveSteps(runId, 1, { flow });
          await h.recordCalls(runId, 0, 0, 3);
        }
        await h.store.delete(gone);
        await expect(h.store.latest(gone)).rejects.toBeInstanceOf(CheckpointNotFound);
        expect(await h.store.calls(gone)).toEqual([]);
        expect(await unfinished(h.store, flow)).toEqual([kept]);
        expect((await h.store.latest(kept)).step).toBe(1);
        expect(await h.store.calls(kept)).toHaveLength(3);
        // The id is free again: a new run starts at step 0 with an empty log.
        await h.store.save(gone, 0, h.row(gone, 0, { flow }));
        await h.recordCalls(gone, 0, 0, 1);
        expect(await h.store.calls(gone)).toHaveLength(1);
      },
    },
    {
      name: "delete of an unknown run does nothing",
      async run(h) {
        await h.store.delete(h.runId("unknown"));
      },
    },
  ],
};
