import { MemoryCheckpointStore, startWorker, ToolRegistry, type CheckpointStore } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, workflow } from "../src/index.js";
import { runnerOn } from "./helpers.js";

// Adversarial review of child runs: each verdict comes from what tools really did (counters), not from the records.

const Source = z.object({ source: z.string() });
const Out = z.object({ words: z.number().default(0), note: z.string().default("") });

/** A child that fetches its source once (counted). */
function research(fetched: string[]) {
  const registry = new ToolRegistry()
    .tool("fetch", (args: { source: string }) => {
      fetched.push(args.source);
      return `text of ${args.source}`;
    })
    .tool("flaky", (args: { fail: boolean }) => {
      if (args.fail && flaky.failing) throw new Error("flaky is down");
      return "ok";
    });
  const child = workflow("research", { input: Source }, async (ctx, { source }) => {
    const text = await ctx.call<string>("fetch", { source });
    return { words: text.length };
  });
  return { registry, child };
}
const flaky = { failing: true };

/** Serves `flows` like a fleet's worker until `done` holds or `ms` passed; true when it held. */
async function serve(
  store: CheckpointStore,
  registry: ToolRegistry,
  flows: Flow<never>[],
  done: () => Promise<boolean>,
  ms = 3_000,
): Promise<boolean> {
  const runner = runnerOn(store, registry);
  const worker = startWorker({
    serve: flows.map((flow) => runner.served(flow)),
    pollMs: 20,
    maxPollMs: 20,
    stopOnSignals: false,
  });
  try {
    await until(done, ms);
    return true;
  } catch {
    return false;
  } finally {
    await worker.stop();
  }
}

const statusOf = async (store: CheckpointStore, runId: string) => (await store.latest(runId)).status;

describe("child runs, adversarial", () => {
  it("a parent that failed while its child ran, then retried: it wakes with the child's end", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    // One superstep: "spawn" waits for a child; "side" calls a tool that fails the parent.
    const parent = new Flow("parent", { state: Out })
      .node("start", () => ({}))
      .node("spawn", async (_s, ctx) => {
        const got = await ctx.startChild(child, { source: "abc" });
        return { words: got.words };
      })
      .node("side", async (_s, ctx) => {
        await ctx.call("flaky", { fail: true });
        return { note: "side ok" };
      })
      .edge("start", ["spawn", "side"])
      .end("spawn")
      .end("side");
    const store = new MemoryCheckpointStore();
    flaky.failing = true;
    await expect(runnerOn(store, registry).run(parent, {}, { runId: "p" })).rejects.toThrow(/flaky is down/);
    expect((await store.latest("p")).status).toBe("failed");
    // The child runs on the fleet and ends while its parent is failed.
    const [childId] = (await store.listRuns({ runIdPrefix: "p." })).runs.map((r) => r.runId);
    expect(
      await serve(store, registry, [child] as never, async () => (await statusOf(store, childId ?? "")) === "done"),
    ).toBe(true);
    expect(fetched).toEqual(["abc"]);
    // The flaky tool is fixed; an operator retries the parent.
    flaky.failing = false;
    await runnerOn(store, registry).retry(parent, "p");
    // The child ended (done): the parent must not wait for an end that is never told again.
    await serve(store, registry, [parent, child] as never, async () => (await statusOf(store, "p")) !== "running");
    expect(await statusOf(store, "p")).toBe("done");
    expect(fetched).toEqual(["abc"]);
  }, 15_000);

  it("one parent starting two children under the same explicit runId: the second is refused or runs, never hangs the parent", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const Seen = z.object({ got: z.array(z.number()).default([]) });
    const parent = new Flow("twice", { state: Seen })
      .node("both", async (_s, ctx) => {
        const a = await ctx.startChild(child, { source: "a" }, { runId: "job" });
        const b = await ctx.startChild(child, { source: "bb" }, { runId: "job" });
        return { got: [a.words, b.words] };
      })
      .end("both");
    const store = new MemoryCheckpointStore();
    const runner = runnerOn(store, registry);
    await runner.run(parent, {}, { runId: "t" });
    await serve(store, registry, [parent, child] as never, async () => (await statusOf(store, "t")) !== "running");
    // Either the second start is refused (the run fails: "job" is another child's), or child "bb" runs; the parent
    // must not be left waiting forever for an end that was already taken.
    const status = await statusOf(store, "t");
    expect(status === "failed" || fetched.includes("bb"), `parent ${status}, fetched ${fetched}`).toBe(true);
  }, 15_000);

  it("a node that loops, starting its child under a fixed runId each visit: the second visit never hangs", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const Count = z.object({ n: z.number().default(0) });
    const parent = new Flow("nightly", { state: Count })
      .node("batch", async (state, ctx) => {
        await ctx.startChild(child, { source: `night ${state.n}` }, { runId: "nightly-job" });
        return { n: state.n + 1 };
      })
      .edge("batch", (state) => (state.n < 2 ? "batch" : []));
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(parent, {}, { runId: "n" });
    await serve(store, registry, [parent, child] as never, async () => (await statusOf(store, "n")) !== "running");
    const status = await statusOf(store, "n");
    expect(status === "failed" || fetched.includes("night 1"), `parent ${status}, fetched ${fetched}`).toBe(true);
  }, 15_000);
});
