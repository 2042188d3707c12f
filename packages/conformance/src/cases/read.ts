import { CheckpointNotFound, type CheckpointStore } from "@durable/core";
import type { ListOptions } from "@durable/core/store";
import { expect } from "vitest";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

/** Every id of `listUnfinished`, sorted (an id given twice stays twice). */
export async function unfinished(store: CheckpointStore, flow: string, options?: ListOptions): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(flow, options)) ids.push(id);
  return ids.sort();
}

export const readGroup: ConformanceGroup = {
  name: "read",
  proves: "latest, listUnfinished and delete read and remove exactly the rows they name",
  cases: [
    {
      name: "latest gives the row of the highest step, also past step 9",
      async run(h) {
        const runId = h.runId();
        // 12 steps: a store ordering steps as text ("9" after "11") or taking the first row shows.
        await h.saveSteps(runId, 11);
        const latest = await h.store.latest(runId);
        expect(
          latest,
          rule("latest(runId) after saving steps 0–11", "the row of step 11 (steps compare as numbers)"),
        ).toEqual({
          runId,
          step: 11,
          ...h.row(runId, 11),
        });
      },
    },
    {
      name: "run ids and flow names of any well-formed text round-trip: characters beyond the BMP, accents, case and spaces, each its own run",
      async run(h) {
        const base = h.runId("text");
        const flow = `${h.runId("flow")} 🎟 Ünïcode`;
        // Ids that a store folding case, normalising, or storing UTF-16 halves would confuse.
        const ids = [
          `${base} 🎟`,
          `${base} 🎫`,
          `${base} \u00c9`,
          `${base} E\u0301`,
          `${base} \u00e9`,
          `${base}  `,
          `${base} 北京`,
        ];
        for (const runId of ids) await h.store.save(runId, 0, h.row(runId, 0, { name: flow, data: { runId } }));
        for (const runId of ids) {
          expect(
            await h.store.latest(runId),
            breaks("run-ids-and-names", `latest(${JSON.stringify(runId)})`, "the row saved under exactly that id"),
          ).toEqual({
            runId,
            step: 0,
            ...h.row(runId, 0, { name: flow, data: { runId } }),
          });
        }
        expect(
          await unfinished(h.store, flow),
          breaks("run-ids-and-names", `listUnfinished(${JSON.stringify(flow)})`, "every id, unchanged"),
        ).toEqual([...ids].sort());
      },
    },
    {
      name: "an unknown run is CheckpointNotFound",
      async run(h) {
        const error = await h.store.latest(h.runId("unknown")).catch((e: unknown) => e);
        expect(error, rule("latest(runId) of an unknown run", "CheckpointNotFound")).toBeInstanceOf(CheckpointNotFound);
        expect(
          (error as CheckpointNotFound).code,
          rule("latest(runId) of an unknown run", "error.code CHECKPOINT_NOT_FOUND"),
        ).toBe("CHECKPOINT_NOT_FOUND");
      },
    },
    {
      name: "listUnfinished gives the running and paused runs of that flow only, each once",
      async run(h) {
        const flow = h.runId("flow");
        const ids = {
          running: h.runId("running"),
          paused: h.runId("paused"),
          done: h.runId("done"),
          failed: h.runId("failed"),
        };
        for (const [status, runId] of Object.entries(ids)) {
          await h.store.save(runId, 0, h.row(runId, 0, { name: flow }));
          await h.store.save(runId, 1, h.row(runId, 1, { name: flow, status: status as "running" }));
        }
        const other = h.runId("other-flow");
        await h.store.save(other, 0, h.row(other, 0, { name: `${flow}-other` }));
        expect(
          await unfinished(h.store, flow),
          rule(
            "listUnfinished(flow) over a running, a paused, a done and a failed run and another flow's",
            "the running and the paused run's ids only",
          ),
        ).toEqual([ids.running, ids.paused].sort());
      },
    },
    {
      name: "listUnfinished follows a run's latest status",
      async run(h) {
        const flow = h.runId("flow");
        const runId = h.runId();
        const listed = (status: string, expected: string) =>
          rule(`listUnfinished(flow) after a ${status} latest step`, expected);
        await h.store.save(runId, 0, h.row(runId, 0, { name: flow, status: "paused" }));
        expect(await unfinished(h.store, flow), listed("paused", "the run's id")).toEqual([runId]);
        await h.store.save(runId, 1, h.row(runId, 1, { name: flow, status: "running" }));
        expect(await unfinished(h.store, flow), listed("running", "the run's id")).toEqual([runId]);
        await h.store.save(runId, 2, h.row(runId, 2, { name: flow, status: "done" }));
        expect(await unfinished(h.store, flow), listed("done", "no id")).toEqual([]);
      },
    },
    {
      name: "delete removes the run's checkpoints and call records and touches no other run",
      async run(h) {
        const flow = h.runId("flow");
        // The kept run's id starts with the deleted one's: a delete matching a prefix shows.
        const gone = h.runId("gone");
        const kept = `${gone}-kept`;
        for (const runId of [gone, kept]) {
          await h.saveSteps(runId, 1, { name: flow });
          await h.recordCalls(runId, 0, 0, 3);
        }
        await h.store.delete(gone);
        const after = (operation: string, expected: string) => rule(`${operation} after delete(runId)`, expected);
        await expectRejects(CheckpointNotFound, after("latest(runId)", "CheckpointNotFound"), h.store.latest(gone));
        expect(
          await h.store.calls(gone),
          after("calls(runId)", "no records (delete removes the call records too)"),
        ).toEqual([]);
        expect(await unfinished(h.store, flow), after("listUnfinished(flow)", "only the other run")).toEqual([kept]);
        const untouched = after(`latest of run "<id>-kept"`, "its step 1 (delete touches no other run)");
        expect((await expectResolves(untouched, h.store.latest(kept))).step, untouched).toBe(1);
        expect(
          await h.store.calls(kept),
          after(`calls of run "<id>-kept"`, "its 3 records (delete touches no other run)"),
        ).toHaveLength(3);
        // The id is free again: a new run starts at step 0 with an empty log.
        await h.store.save(gone, 0, h.row(gone, 0, { name: flow }));
        await h.recordCalls(gone, 0, 0, 1);
        expect(
          await h.store.calls(gone),
          after("calls(runId) of the run started again", "only its new record"),
        ).toHaveLength(1);
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
