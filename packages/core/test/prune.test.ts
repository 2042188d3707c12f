import { describe, expect, it } from "vitest";
import { CheckpointNotFound, InvalidInput, MemoryCheckpointStore, pruneRuns } from "../src/index.js";
import { MemoryRunAnchor } from "../src/store.js";
import type { CheckpointStore, RunPage, RunQuery } from "../src/store.js";
import { DurableRun } from "../src/runner.js";
import { anchoredStore } from "../src/store/anchored-store.js";
import { KEY, sealer } from "./helpers.js";

/** Saves a run of steps 0…`ended ? 1 : 0`, the last `done` when `ended`. */
async function runOf(store: CheckpointStore, runId: string, status: "done" | "failed" | "running") {
  const { run } = await DurableRun.start({
    store,
    sealer,
    runId,
    name: "tickets",
    kind: "flow",
    identity: {},
    data: { state: runId },
  });
  if (status !== "running") await run.save(status, { state: runId });
  else await run.stopLease(true);
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("pruneRuns", () => {
  it("deletes ended runs saved before olderThan, a page at a time, and leaves running and newer runs", async () => {
    const store = new MemoryCheckpointStore();
    for (const [id, status] of [
      ["a", "done"],
      ["b", "failed"],
      ["c", "running"],
      ["d", "done"],
    ] as const)
      await runOf(store, id, status);
    await pause();
    const cut = Date.now();
    await pause();
    await runOf(store, "new", "done");
    const first = await pruneRuns({ checkpoints: store, checkpointKey: KEY, olderThan: new Date(cut), limit: 2 });
    expect(first.pruned).toHaveLength(2);
    expect(first.more).toBe(true);
    const second = await pruneRuns({ checkpoints: store, checkpointKey: KEY, olderThan: cut, limit: 2 });
    expect([...first.pruned, ...second.pruned].sort()).toEqual(["a", "b", "d"]);
    expect(second.more).toBe(false);
    for (const id of ["a", "b", "d"]) await expect(store.latest(id)).rejects.toThrow(CheckpointNotFound);
    expect((await store.calls("a")).length).toBe(0);
    expect((await store.latest("c")).status).toBe("running");
    expect((await store.latest("new")).status).toBe("done");
  });

  it("leaves a run whose index says ended while its sealed latest checkpoint says running", async () => {
    /** Its index lists every run as done. */
    class LyingIndex extends MemoryCheckpointStore {
      override async listRuns(query?: RunQuery): Promise<RunPage> {
        const page = await super.listRuns({ ...query, status: undefined });
        return { runs: page.runs.map((run) => ({ ...run, status: "done" as const })) };
      }
    }
    const store = new LyingIndex();
    const inner = store;
    await runOf(store, "r", "running");
    await pause();
    const result = await pruneRuns({ checkpoints: store, checkpointKey: KEY, olderThan: Date.now() });
    expect(result.pruned).toEqual([]);
    expect((await inner.latest("r")).status).toBe("running");
  });

  it("with an anchor, a pruned run reads as unknown, never as corrupt", async () => {
    const store = new MemoryCheckpointStore();
    const anchor = new MemoryRunAnchor();
    const options = { checkpoints: store, checkpointKey: KEY, anchor };
    const { run } = await DurableRun.start({
      store: anchoredStore(store, anchor),
      sealer,
      runId: "anchored",
      name: "tickets",
      kind: "flow",
      identity: {},
      data: {},
    });
    await run.save("done", {});
    await pause();
    expect((await pruneRuns({ ...options, olderThan: Date.now() })).pruned).toEqual(["anchored"]);
    await expect(DurableRun.latest(anchoredStore(store, anchor), sealer, "anchored")).rejects.toThrow(
      CheckpointNotFound,
    );
  });

  it("refuses a bad olderThan or limit with InvalidInput, deleting nothing", async () => {
    const store = new MemoryCheckpointStore();
    await runOf(store, "a", "done");
    for (const bad of [{ olderThan: "yesterday" }, { olderThan: -1 }, { olderThan: Date.now(), limit: 0 }])
      await expect(
        pruneRuns({ checkpoints: store, checkpointKey: KEY, ...(bad as { olderThan: number }) }),
      ).rejects.toThrow(InvalidInput);
    expect((await store.latest("a")).status).toBe("done");
  });
});
