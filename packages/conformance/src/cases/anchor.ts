import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunAnchor } from "@durable/core/store";
import { CheckpointStoreCorrupt, StoreUnavailable } from "@durable/core";
import { DurableRun, readCallLog } from "@durable/core/runner";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceInitializer } from "../harness/initializer.js";
import { ANCHOR_VARIABLE, type AnchorHandle, type KitAnchor, openAnchor } from "../process/anchors.js";
import { BackedUpStore } from "../process/backup.js";
import { executions } from "../process/child.js";
import { CALLS, cutShort, kitSealer, ScenarioDriver } from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker } from "../process/workers.js";
import type { ConformanceGroup } from "./case.js";

const needsAnchor = (init: ConformanceInitializer) =>
  init.capabilities?.anchor === undefined ? "the initializer declares no `anchor` capability" : undefined;

/** The flow's charge: not idempotent, so a second execution is a second charge. */
const CHARGE = [...CALLS.flow].find(([, tool]) => tool === "charge")![0];

export const anchorGroup: ConformanceGroup = {
  name: "anchor",
  proves:
    "an anchor keeps the highest head it was given and never lowers it; with it, a consistent rollback of a run, its deletion, and the deleted tail records of a call finished after the last checkpoint are CheckpointStoreCorrupt before any tool runs, where without it the charge runs twice",
  skipUnless: needsAnchor,
  cases: [
    {
      name: "advance raises the step, the segment and each segment's count to the highest given and never lowers them; an unknown run reads undefined; forget forgets that run only",
      run: (h) =>
        withAnchor(h, async ({ anchor }) => {
          const [one, two] = [h.runId("anchor"), h.runId("anchor")];
          expect(await anchor.read(one)).toBeUndefined();
          await anchor.advance(one, { step: 3, segment: 0, calls: [5] });
          await anchor.advance(one, { step: 2, segment: 1, calls: [4, 2] });
          await anchor.advance(one, { step: 0, segment: 0, calls: [0] });
          expect(await anchor.read(one)).toEqual({ step: 3, segment: 1, calls: [5, 2] });
          await anchor.advance(two, { step: 1, segment: 0, calls: [1] });
          await anchor.forget(one);
          expect(await anchor.read(one)).toBeUndefined();
          expect(await anchor.read(two)).toEqual({ step: 1, segment: 0, calls: [1] });
        }),
    },
    {
      name: "advances of one run from 32 writers at once, in any order, leave the highest of each field",
      run: (h) =>
        withAnchor(h, async ({ anchor }) => {
          const runId = h.runId("anchor-race");
          await Promise.all(
            Array.from({ length: 32 }, (_, i) =>
              anchor.advance(runId, { step: (i * 7) % 32, segment: i % 3, calls: [i, 31 - i, (i * 5) % 32] }),
            ),
          );
          expect(await anchor.read(runId)).toEqual({ step: 31, segment: 2, calls: [31, 31, 31] });
        }),
    },
    {
      name: "a consistent rollback (the run restored to an earlier copy of all its rows): without an anchor the charge runs twice, with one recovery is CheckpointStoreCorrupt and no tool runs",
      timeout: 60_000,
      run: (h) =>
        withAnchor(h, async ({ anchor }, effects) => {
          const backup = new BackedUpStore(h.store);
          const attack = async (runId: string, checkedBy: RunAnchor | undefined) => {
            await new ScenarioDriver(backup.store, effects, anchor).run("flow", runId);
            expect((await DurableRun.latest(h.store, kitSealer, runId)).status).toBe("done");
            // Back to step 1: round 2 (the charge) and the pause after it are gone, records and checkpoints alike.
            await backup.restore(runId, backup.writesUntilStep(runId, 1));
            return new ScenarioDriver(h.store, effects, checkedBy).recoverOnce("flow", runId, true);
          };
          const [open, anchored] = [h.runId("rollback"), h.runId("rollback-anchored")];
          expect(await attack(open, undefined)).toBe("paused");
          expect(executions(effects, `${open} `).get(`${open} ${CHARGE}`)).toBe(2);
          await expect(attack(anchored, anchor)).rejects.toThrow(CheckpointStoreCorrupt);
          expect(executions(effects, `${anchored} `).get(`${anchored} ${CHARGE}`)).toBe(1);
        }),
    },
    {
      name: "a run deleted behind the runner's back: with an anchor, recovery is CheckpointStoreCorrupt, not CheckpointNotFound",
      run: (h) =>
        withAnchor(h, async ({ anchor }, effects) => {
          const runId = h.runId("deleted");
          await new ScenarioDriver(h.store, effects, anchor).run("flow", runId);
          await h.store.delete(runId);
          await expect(new ScenarioDriver(h.store, effects, anchor).recoverOnce("flow", runId)).rejects.toThrow(
            /the anchor knows step \d+ of the run, and the store holds none/,
          );
        }),
    },
    {
      name: "a worker SIGKILLed after the charge finished past its last checkpoint, then the log's tail deleted: without an anchor the charge runs twice, with one CheckpointStoreCorrupt and it ran once",
      timeout: 120_000,
      skipUnless: (init) =>
        needsMultiProcess(init) ??
        (init.raw === undefined ? "the initializer gives no `raw` oracle to delete stored records" : undefined),
      run: (h) =>
        withAnchor(h, async (opened, effects) => {
          const truncated = async (label: string) => {
            const runId = h.runId(label);
            // The notify tool's second attempt (its fifth tool execution): round 2's charge and audit are done, uncounted.
            const worker = spawnWorker(h.init, h.store, effects, ["run", "flow", runId], {
              ...process.env,
              DURABLE_FAULT_POINT: "tool.inside@5",
              [ANCHOR_VARIABLE]: JSON.stringify(opened.named),
            });
            expect((await worker.exited()).signal, worker.stderr).toBe("SIGKILL");
            const counted = (await DurableRun.latest(h.store, kitSealer, runId)).calls[0] ?? 0;
            const log = await readCallLog(h.store, kitSealer, runId, []);
            expect(log.slice(counted).some((r) => r.callId === CHARGE && r.kind === "done")).toBe(true);
            for (const record of log.slice(counted).reverse()) await h.raw.deleteCall(runId, 0, record.seq);
            return runId;
          };
          const [open, anchored] = [await truncated("tail"), await truncated("tail-anchored")];
          await new ScenarioDriver(h.store, effects).recoverOnce("flow", open, true);
          expect(executions(effects, `${open} `).get(`${open} ${CHARGE}`)).toBe(2);
          await expect(
            new ScenarioDriver(h.store, effects, opened.anchor).recoverOnce("flow", anchored, true),
          ).rejects.toThrow(/the anchor knows \d+ call records in segment 0/);
          expect(executions(effects, `${anchored} `).get(`${anchored} ${CHARGE}`)).toBe(1);
        }),
    },
    {
      name: "clean runs and recoveries through the anchor, flows and tool loops, plain and encrypted, raise no false alarm",
      timeout: 60_000,
      run: (h) =>
        withAnchor(h, async ({ anchor }, effects) => {
          const driver = new ScenarioDriver(h.store, effects, anchor);
          for (const [i, scenario] of (["flow", "loop", "flow", "loop"] as const).entries()) {
            const runId = h.runId(`clean-${scenario}`, i >= 2);
            await driver.run(scenario, runId);
            const latest = await DurableRun.latest(h.store, kitSealer, runId);
            expect(await anchor.read(runId)).toMatchObject({ step: latest.step, segment: latest.segment });
          }
          // A run cut short and recovered by another worker (a new segment) through the same anchor.
          const cut = h.runId("cut");
          await expect(
            new ScenarioDriver(cutShort(h.store, new Set(["refund"])), effects, anchor).run("flow", cut),
          ).rejects.toThrow(StoreUnavailable);
          expect((await driver.recoverToEnd("flow", cut)).reported).toEqual({});
        }),
    },
  ],
};

/** An anchor the group opened, and how a worker process opens it. */
interface Opened {
  readonly anchor: KitAnchor;
  readonly named: AnchorHandle;
}

/** Runs `work` with a new anchor from the initializer and an effects file, both removed after. */
async function withAnchor(h: Harness, work: (opened: Opened, effects: string) => Promise<void>): Promise<void> {
  const capability = h.init.capabilities?.anchor;
  if (capability === undefined) throw new Error("this test needs the `anchor` capability");
  const named = { opener: capability.opener, handle: capability.newHandle() };
  const anchor = await openAnchor(named);
  const dir = mkdtempSync(join(tmpdir(), "durable-anchor-"));
  try {
    await work({ anchor, named }, join(dir, "effects"));
  } finally {
    await anchor.close?.();
    await capability.remove?.(named.handle);
    rmSync(dir, { recursive: true, force: true });
  }
}
