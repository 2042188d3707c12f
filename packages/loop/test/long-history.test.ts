import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { runToolLoop, type LoopModel } from "../src/index.js";

const KEY = "loop-tests-key-0123456789abcdef-xyz";
const PAGE = "a page of the long run ".repeat(90);
const registry = new ToolRegistry().tool("fetch_page", (a: { n: number }) => `${a.n}: ${PAGE}`);

/** Asks for one page a step until it read `steps`, then answers. */
function paging(steps: number): LoopModel {
  return {
    async reply(messages) {
      const made = messages.filter((message) => message.role === "assistant").length;
      if (made >= steps) return { text: "read them all", toolCalls: [] };
      return { text: "", toolCalls: [{ id: `page-${made}`, name: "fetch_page", args: { n: made } }] };
    },
  };
}

/** The steps of the run's checkpoints that hold the whole data, and how many rows it has. */
async function snapshots(store: MemoryCheckpointStore, runId: string) {
  const rows = await store.history(runId);
  return { rows: rows.length, at: rows.flatMap((row) => (row.sealed.includes('"data":') ? [row.step] : [])) };
}

describe("a long tool loop's checkpoints", () => {
  it("hold each step's change: a loop whose history only grows writes no snapshot after its first few", async () => {
    const store = new MemoryCheckpointStore();
    await runToolLoop(paging(40), registry, [{ role: "user", content: "read" }], {
      checkpoints: store,
      checkpointKey: KEY,
      runId: "grows",
      maxSteps: 41,
    });
    const { rows, at } = await snapshots(store, "grows");
    expect(rows).toBeGreaterThan(80);
    expect(Math.max(...at)).toBeLessThan(10);
  });

  it("with the runner's snapshotEvery, a snapshot follows at most that many changes", async () => {
    const store = new MemoryCheckpointStore();
    await runToolLoop(paging(40), registry, [{ role: "user", content: "read" }], {
      checkpoints: store,
      checkpointKey: KEY,
      runId: "bounded",
      maxSteps: 41,
      snapshotEvery: 10,
    });
    const { rows, at } = await snapshots(store, "bounded");
    const gaps = [...at.slice(1), rows].map((step, i) => step - (at[i] as number) - 1);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(10);
  });

  it("refuses a snapshotEvery that is not a whole number ≥ 1 with InvalidInput, before anything is saved", async () => {
    const store = new MemoryCheckpointStore();
    for (const snapshotEvery of [0, 2.5, -1])
      await expect(
        runToolLoop(paging(1), registry, [{ role: "user", content: "read" }], {
          checkpoints: store,
          checkpointKey: KEY,
          runId: "bad",
          snapshotEvery,
        }),
      ).rejects.toThrow(InvalidInput);
    expect(await store.history("bad")).toEqual([]);
  });
});
