import { CheckpointStoreCorrupt, type JsonValue } from "@durable/core";
import { DurableRun, openHistory } from "@durable/core/runner";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { RawAccess } from "../harness/initializer.js";
import type { ConformanceCase } from "./case.js";
import { breaks } from "./rule.js";

/** Steps of a chained run: each appends one ~1 KB item, so every row after the first is a change. */
const STEPS = 12;
const ITEM = "a page the run read ".repeat(50);

/** A run whose data only grows, saved through the runner's own path: a snapshot at step 0, then changes. */
async function chainedRun(h: Harness, runId: string): Promise<void> {
  const { run } = await DurableRun.start({
    store: h.store,
    sealer: h.sealer,
    runId,
    name: "conformance-chain",
    kind: "loop",
    identity: {},
    data: { items: [] },
  });
  let items: JsonValue[] = [];
  for (let step = 1; step <= STEPS; step++) {
    items = [...items, `${step}: ${ITEM}`];
    await run.save(step === STEPS ? "done" : "running", { items });
  }
}

/** A change to a chained run's rows past the store's API; `other` is a second chained run of the same shape. */
interface ChainTamper {
  readonly name: string;
  readonly needsDelete?: true;
  apply(raw: RawAccess, runId: string, other: string): Promise<void>;
}

const MIDDLE = 6;

const CHAIN_TAMPERS: readonly ChainTamper[] = [
  {
    name: "a change deleted from the middle",
    needsDelete: true,
    apply: (raw, runId) => raw.deleteCheckpoint!(runId, MIDDLE),
  },
  {
    name: "two changes swapped",
    async apply(raw, runId) {
      const [a, b] = [await raw.readCheckpoint(runId, MIDDLE), await raw.readCheckpoint(runId, MIDDLE + 1)];
      await raw.writeCheckpoint(runId, MIDDLE, b);
      await raw.writeCheckpoint(runId, MIDDLE + 1, a);
    },
  },
  {
    name: "a change altered (one byte of its body)",
    async apply(raw, runId) {
      const sealed = await raw.readCheckpoint(runId, MIDDLE);
      await raw.writeCheckpoint(runId, MIDDLE, sealed.replace("a page", "a pagE"));
    },
  },
  {
    name: "the snapshot altered (one byte of its body)",
    async apply(raw, runId) {
      const sealed = await raw.readCheckpoint(runId, 0);
      await raw.writeCheckpoint(runId, 0, sealed.replace('"items":[]', '"items":[0]'));
    },
  },
  {
    name: "the snapshot replaced by another run's",
    apply: async (raw, runId, other) => raw.writeCheckpoint(runId, 0, await raw.readCheckpoint(other, 0)),
  },
  {
    name: "a change spliced from another run at the same step",
    apply: async (raw, runId, other) => raw.writeCheckpoint(runId, MIDDLE, await raw.readCheckpoint(other, MIDDLE)),
  },
];

function noHistory(h: Harness): string | undefined {
  return h.store.history === undefined ? "the store has no `history`: a runner saves its runs whole" : undefined;
}

/** The chain cases of the tamper group: what a store gives back must be the run's own chain, whole and in order. */
export const chainCases: readonly ConformanceCase[] = [
  {
    name: `a run saved as changes (${STEPS} steps) reads back whole from the store's history, the latest and the whole timeline`,
    async run(h) {
      const runId = h.runId("chain");
      await chainedRun(h, runId);
      const rows = (await h.store.history?.(runId)) ?? [];
      expect(
        rows.slice(1).every((row) => row.sealed.includes('"delta"') || !row.sealed.startsWith("d1.")),
        breaks(
          "inspection",
          "history(runId) of a run that grows, saved by a runner",
          "changes after the first snapshot",
        ),
      ).toBe(true);
      // A store may give every row (core skips what comes before `from`), never fewer.
      const ranged = breaks("inspection", `history(runId, ${STEPS - 2})`, `steps ${STEPS - 2} to ${STEPS} (or all)`);
      const all = Array.from({ length: STEPS + 1 }, (_, step) => step);
      const tail = (await h.store.history!(runId, STEPS - 2)).map((row) => row.step);
      expect([all.slice(-3), all], ranged).toContainEqual(tail);
      const latest = await DurableRun.latest(h.store, h.sealer, runId);
      expect((latest.data as { items: JsonValue[] }).items).toHaveLength(STEPS);
      const steps = breaks("inspection", "history(runId)", "every step of the run, in order");
      expect(
        openHistory(h.sealer, runId, rows).map((body) => body.step),
        steps,
      ).toEqual(Array.from({ length: STEPS + 1 }, (_, step) => step));
    },
    skipFor: noHistory,
  },
  ...CHAIN_TAMPERS.map(
    (tamper): ConformanceCase => ({
      name: `${tamper.name} in a run saved as changes: the latest checkpoint and the timeline are CheckpointStoreCorrupt`,
      skipFor: (h) =>
        noHistory(h) ??
        (tamper.needsDelete === true && h.raw.deleteCheckpoint === undefined
          ? "the `raw` oracle has no `deleteCheckpoint`"
          : undefined),
      async run(h) {
        const [runId, other] = [h.runId("chain"), h.runId("chain-other")];
        await chainedRun(h, runId);
        await chainedRun(h, other);
        await tamper.apply(h.raw, runId, other);
        await expect(DurableRun.latest(h.store, h.sealer, runId), tamper.name).rejects.toThrow(CheckpointStoreCorrupt);
        const rows = (await h.store.history?.(runId)) ?? [];
        expect(() => openHistory(h.sealer, runId, rows), tamper.name).toThrow(CheckpointStoreCorrupt);
      },
    }),
  ),
];
