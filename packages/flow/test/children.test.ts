import { type CheckpointStore, MemoryCheckpointStore, startWorker, ToolRegistry } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ChildRunFailed, Flow, workflow } from "../src/index.js";
import { runnerOn } from "./helpers.js";

// Child runs: started once from a node (their ids derived from the parent's call identity), driven by the workers
// that serve their flow, awaited durably (the parent is saved waiting for each child's end event).

const Source = z.object({ source: z.string() });

/** A research sub-agent as a workflow: fetches its source once, fails on "broken". */
function research() {
  return workflow("research", { input: Source }, async (ctx, { source }) => {
    const text = await ctx.call<string>("fetch", { source });
    if (source === "broken") throw new Error(`cannot read ${source}`);
    return { source, words: text.length };
  });
}

function tools(fetched: string[]) {
  return new ToolRegistry().tool("fetch", (args: { source: string }) => {
    fetched.push(args.source);
    return `text of ${args.source}`;
  });
}

const Report = z.object({ sources: z.array(z.string()), words: z.number().default(0), note: z.string().default("") });

/** A parent that researches each source in a child run and adds up the words. */
function reportFlow(child: ReturnType<typeof research>) {
  return new Flow("report", { state: Report })
    .node("fan-out", async ({ sources }, ctx) => {
      const results = await Promise.all(sources.map((source) => ctx.startChild(child, { source })));
      return { words: results.reduce((sum, r) => sum + r.words, 0) };
    })
    .end("fan-out");
}

/** Serves both flows until `done` holds, like a fleet's worker. */
async function serving(
  store: CheckpointStore,
  registry: ToolRegistry,
  flows: Flow<never>[],
  done: () => Promise<boolean>,
) {
  const runner = runnerOn(store, registry);
  const worker = startWorker({
    serve: flows.map((flow) => runner.served(flow)),
    pollMs: 30,
    maxPollMs: 30,
    stopOnSignals: false,
  });
  try {
    await until(done, 10_000);
  } finally {
    await worker.stop();
  }
}

async function runIds(store: MemoryCheckpointStore, prefix: string): Promise<string[]> {
  return (await store.listRuns({ runIdPrefix: prefix })).runs.map((r) => r.runId).sort();
}

describe("child runs", () => {
  it("a parent fans out to three children and waits for all: each child runs once, on the fleet, and the parent gets their outputs", async () => {
    const fetched: string[] = [];
    const child = research();
    const parent = reportFlow(child);
    const store = new MemoryCheckpointStore();
    const registry = tools(fetched);
    const waiting = await runnerOn(store, registry).run(parent, { sources: ["a", "bb", "ccc"] }, { runId: "p" });
    expect(waiting).toMatchObject({ status: "asleep" });
    const children = (await runIds(store, "p.")).filter((id) => id !== "p");
    expect(children).toHaveLength(3);
    await serving(store, registry, [parent, child] as never, async () => (await store.latest("p")).status === "done");
    expect(fetched.sort()).toEqual(["a", "bb", "ccc"]);
    const done = await runnerOn(store, registry)
      .recover(parent, "p")
      .catch(() => undefined);
    expect(done).toBeUndefined(); // done: nothing to recover
    // Every child ended once; no second child was started by the parent's replays.
    expect(await runIds(store, "p.")).toEqual(children);
    for (const id of children) expect((await store.latest(id)).status).toBe("done");
  });

  it("a failed child rejects the parent's await with ChildRunFailed, which the node may catch", async () => {
    const fetched: string[] = [];
    const child = research();
    const parent = new Flow("careful", { state: Report })
      .node("one", async (_state, ctx) => {
        try {
          await ctx.startChild(child, { source: "broken" });
          return { note: "read it" };
        } catch (error) {
          return { note: error instanceof ChildRunFailed ? `failed: ${error.error}` : "other" };
        }
      })
      .end("one");
    const store = new MemoryCheckpointStore();
    const registry = tools(fetched);
    await runnerOn(store, registry).run(parent, { sources: [] }, { runId: "c" });
    await serving(store, registry, [parent, child] as never, async () => (await store.latest("c")).status === "done");
    const [childId] = (await runIds(store, "c.")).filter((id) => id !== "c");
    expect((await store.latest(childId ?? "")).status).toBe("failed");
    expect(fetched).toEqual(["broken"]);
  });

  it("cancelling the parent cancels the children it waits for, not a detached one; a child cancelled alone fails its parent's await", async () => {
    const fetched: string[] = [];
    const child = research();
    const parent = new Flow("both", { state: Report })
      .node("start", async (_state, ctx) => {
        await ctx.startChild(child, { source: "kept" }, { detached: true, runId: "kept-child" });
        await ctx.startChild(child, { source: "owned" }, { runId: "owned-child" });
      })
      .end("start");
    const store = new MemoryCheckpointStore();
    const registry = tools(fetched);
    const runner = runnerOn(store, registry);
    await runner.run(parent, { sources: [] }, { runId: "x" });
    await runner.cancel(parent, "x", "no longer needed");
    expect((await store.latest("owned-child")).status).toBe("failed");
    expect((await store.latest("kept-child")).status).toBe("running");

    const lone = new Flow("lone", { state: Report })
      .node("start", async (_state, ctx) => {
        await ctx.startChild(child, { source: "doomed" }, { runId: "doomed-child" });
      })
      .end("start");
    await runner.run(lone, { sources: [] }, { runId: "y" });
    await runner.cancel(child, "doomed-child", "stop it");
    await expect(runner.recover(lone, "y")).rejects.toThrow(/doomed-child.*Cancelled: stop it/);
    expect((await store.latest("y")).status).toBe("failed");
  });

  it("a child run id another run holds is refused; bad options are InvalidInput", async () => {
    const child = research();
    const store = new MemoryCheckpointStore();
    const registry = tools([]);
    await runnerOn(store, registry).run(child, { source: "a" }, { runId: "taken" });
    const parent = new Flow("clash", { state: Report })
      .node("start", async (_state, ctx) => {
        await ctx.startChild(child, { source: "b" }, { runId: "taken" });
      })
      .end("start");
    await expect(runnerOn(store, registry).run(parent, { sources: [] })).rejects.toThrow(/taken/);
    const odd = new Flow("odd", { state: Report })
      .node("start", async (_state, ctx) => {
        await ctx.startChild(child, { source: "b" }, { when: "now" } as never);
      })
      .end("start");
    await expect(runnerOn(store, registry).run(odd, { sources: [] })).rejects.toThrow(/unknown option/);
  });
});
