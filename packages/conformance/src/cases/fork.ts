import { CheckpointStoreCorrupt, forkRun, type JsonValue, sendEvent } from "@durable/core";
import { DurableRun, eventStore, openHistory, readCallLog, readEnvelope } from "@durable/core/runner";
import type { CheckpointStore } from "@durable/core/store";
import { expect } from "vitest";
import { type Harness, KIT_KEY } from "../harness/harness.js";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("forks", operation, expected);

const NAME = "conformance-fork";
/** The step the cases fork from: the claim's round is over there, and the run went on past it. */
const FROM = 3;

/** A run's data as a runner seals it: the envelope of `round`, the program's `items`. */
function envelope(round: number, items: string[], taken?: Record<string, number>): JsonValue {
  return { round, pending: [], decisions: [], ...(taken === undefined ? {} : { taken }), program: { items } };
}

/** A record of round `round`'s one call. */
function call(round: number, kind: "started" | "done", result?: string) {
  const made = { round, callId: `${round}:node:kit_tool:digest:0`, tool: "kit_tool", kind, args: { round } };
  return result === undefined ? made : { ...made, result };
}

/**
 * A run as a worker, its death and a recovery leave it, through core's own
 * writes: step 0; round 1's call and step 1; round 2's call started (the
 * worker dies: no row counts it); a claim (step 2, segment 1) and round 2
 * again, step 3 (counting 3 records of segment 0 and 2 of segment 1, and an
 * event taken when the store keeps events); round 3's call and step 4.
 */
async function originalRun(h: Harness, runId: string): Promise<void> {
  const { store, sealer } = h;
  const { run } = await DurableRun.start({
    store,
    sealer,
    runId,
    name: NAME,
    kind: "flow",
    identity: {},
    data: envelope(1, []),
  });
  await run.log.append(call(1, "started"));
  await run.log.append(call(1, "done", "one"));
  await run.save("running", envelope(2, ["one"]));
  await run.log.append(call(2, "started"));
  await run.giveUp();
  const events = store.sendEvent !== undefined;
  if (events) await sendEvent({ checkpoints: store, checkpointKey: KIT_KEY, runId, name: "go", payload: 1 });
  const { run: again } = await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, runId));
  await again.log.append(call(2, "started"));
  await again.log.append(call(2, "done", "two"));
  await again.save("running", envelope(3, ["one", "two"], events ? { go: 1 } : undefined));
  await again.log.append(call(3, "started"));
  await again.log.append(call(3, "done", "three"));
  await again.save("running", envelope(4, ["one", "two", "three"], events ? { go: 1 } : undefined));
  await again.giveUp();
}

/** Everything a store keeps of a run, as it gives it back. */
async function kept(store: CheckpointStore, runId: string) {
  return {
    rows: (await store.history?.(runId)) ?? [],
    calls: await store.calls(runId),
    inbox: (await store.inbox?.(runId)) ?? [],
  };
}

/** Forks `original` from step `FROM` into `fork`, with the kit's key. */
function fork(h: Harness, original: string, runId: string) {
  return forkRun(original, { checkpoints: h.store, checkpointKey: KIT_KEY, by: "kit", fromStep: FROM, runId });
}

export const forkGroup: ConformanceGroup = {
  name: "fork",
  proves:
    "a fork (`forkRun`) is a run of its own: its rows, records and events are kept and read back under its id, listed by its name, and deleted apart from the original's and the reverse; the original's stay byte for byte; a fork answered with the original's rows, or the reverse, is CheckpointStoreCorrupt",
  skipFor: (store) =>
    store.listRuns === undefined || store.history === undefined
      ? "the store has no inspection capability (`listRuns` and `history`): a fork copies a run's checkpoints by them"
      : undefined,
  cases: [
    {
      name: "a fork's rows, records and events are its own, read back and verified under its id, and listed by its name; the original's are unchanged byte for byte",
      async run(h) {
        const original = h.runId("fork");
        // One character off, where an unescaped LIKE pattern or a glob would take one id for the other.
        const forkId = original.replace("-", "_");
        await originalRun(h, original);
        const before = await kept(h.store, original);
        expect(await fork(h, original, forkId)).toEqual({ runId: forkId, step: FROM + 1 });
        const operation = `history(fork) after forkRun(original, { fromStep: ${FROM} })`;
        const rows = await h.store.history!(forkId);
        expect(
          rows.map((row) => [row.runId, row.step, row.segment, row.status]),
          rule(operation, `the fork's steps 0 to ${FROM + 1} under its own id, the last a claim (segment 2)`),
        ).toEqual([
          [forkId, 0, 0, "running"],
          [forkId, 1, 0, "running"],
          [forkId, 2, 1, "running"],
          [forkId, 3, 1, "running"],
          [forkId, 4, 2, "running"],
        ]);
        const bodies = await expectResolves(
          rule(operation, "rows that open and chain as the fork's"),
          Promise.resolve().then(() => openHistory(h.sealer, forkId, rows)),
        );
        const theirs = openHistory(h.sealer, original, before.rows);
        expect(bodies.slice(0, FROM + 1).map((body) => body.data)).toEqual(
          theirs.slice(0, FROM + 1).map((body) => body.data),
        );
        expect(readEnvelope(forkId, bodies[FROM + 1]!.data).forkedFrom).toMatchObject({ runId: original, step: FROM });
        const latest = await expectResolves(
          rule(`latest(fork) after forkRun`, "the fork's claim"),
          DurableRun.latest(h.store, h.sealer, forkId),
        );
        const records = await expectResolves(
          rule(`calls(fork) after forkRun`, "the 5 records step 3 counts, under the fork's id"),
          readCallLog(h.store, h.sealer, forkId, latest.calls),
        );
        expect(records.map((r) => `${r.segment}.${r.seq} ${r.round} ${r.kind}`)).toEqual([
          "0.0 1 started",
          "0.1 1 done",
          "0.2 2 started",
          "1.0 2 started",
          "1.1 2 done",
        ]);
        if (h.store.sendEvent !== undefined) {
          const inbox = await eventStore("kit", h.store).inbox(forkId);
          expect(
            inbox.map((e) => [e.runId, e.seq]),
            rule("inbox(fork)", "the event step 3 took"),
          ).toEqual([[forkId, 0]]);
        }
        const { runs } = await h.store.listRuns!({ name: NAME, runIdPrefix: forkId });
        expect(
          runs.map((run) => [run.runId, run.step]),
          rule(`listRuns({ name })`, "the fork at step 4"),
        ).toEqual([[forkId, FROM + 1]]);
        expect(await kept(h.store, original), rule("history, calls and inbox of the original", "as before")).toEqual(
          before,
        );
      },
    },
    {
      name: "delete of the original leaves the fork whole, and delete of a fork leaves its original whole",
      async run(h) {
        const [original, other] = [h.runId("fork"), h.runId("fork")];
        // The original's id starts the fork's, where a prefix pattern (`LIKE 'id%'`, `id*`) would take both.
        const [forkId, otherFork] = [`${original}.fork`, `${other}.fork`];
        for (const [id, forked] of [
          [original, forkId],
          [other, otherFork],
        ] as const) {
          await originalRun(h, id);
          await fork(h, id, forked);
        }
        const [forkBefore, otherBefore] = [await kept(h.store, forkId), await kept(h.store, other)];
        await h.store.delete(original);
        expect(await kept(h.store, forkId), rule("the fork's rows after delete(original)", "the fork whole")).toEqual(
          forkBefore,
        );
        await h.store.delete(otherFork);
        expect(
          await kept(h.store, other),
          rule("the original's rows after delete(fork)", "the original whole"),
        ).toEqual(otherBefore);
      },
    },
    {
      name: "a fork answered with the original's row of a step (a store that mixes the two up), and the original with the fork's: every read of it is CheckpointStoreCorrupt",
      skipFor: (h) =>
        h.init.raw === undefined ? "the initializer gives no `raw` oracle to change stored bytes" : undefined,
      async run(h) {
        for (const [step, swapped] of [
          [FROM, "fork"],
          [FROM + 1, "fork"],
          [FROM, "original"],
        ] as const) {
          const original = h.runId("fork");
          const forkId = `${original}.fork`;
          await originalRun(h, original);
          await fork(h, original, forkId);
          const [into, from] = swapped === "fork" ? [forkId, original] : [original, forkId];
          await h.raw.writeCheckpoint(into, step, await h.raw.readCheckpoint(from, step));
          const operation = `the ${swapped}'s step ${step} answered with the other's`;
          await expectRejects(
            CheckpointStoreCorrupt,
            rule(`openHistory(history(${swapped})) with ${operation}`, "CheckpointStoreCorrupt"),
            Promise.resolve().then(async () => openHistory(h.sealer, into, (await h.store.history?.(into)) ?? [])),
          );
          if (step === FROM + 1)
            await expectRejects(
              CheckpointStoreCorrupt,
              rule(`latest(${swapped}) with ${operation}`, "CheckpointStoreCorrupt"),
              DurableRun.latest(h.store, h.sealer, into),
            );
        }
      },
    },
  ],
};
