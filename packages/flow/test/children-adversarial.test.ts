import {
  type CheckpointStore,
  MemoryCheckpointStore,
  StoreUnavailable,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, workflow } from "../src/index.js";
import { forever, runnerOn, storeWith } from "./helpers.js";

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

  it("a parent cancelled while it starts a child (the child saved, its start not yet recorded): the child does not run", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const parent = new Flow("starter", { state: Out })
      .node("prep", async (_s, ctx) => ({ note: await ctx.call<string>("flaky", { fail: false }) }))
      .node("spawn", async (_s, ctx) => {
        const got = await ctx.startChild(child, { source: "expensive" });
        return { words: got.words };
      })
      .edge("prep", "spawn")
      .end("spawn");
    const store = new MemoryCheckpointStore();
    // The operator's cancel lands just after the child's step 0 was saved, before the parent records the start.
    let cancelled: Promise<number> | undefined;
    const racing = storeWith(store, {
      save: async (runId, step, row, lease) => {
        await store.save(runId, step, row, lease);
        if (runId !== "s" && step === 0) {
          cancelled = runnerOn(store, registry).cancel(parent, "s", "the customer withdrew");
          await cancelled;
        }
      },
      sendEvent: (runId, event) => store.sendEvent(runId, event),
      inbox: (runId, from) => store.inbox(runId, from),
    });
    await runnerOn(racing, registry)
      .run(parent, {}, { runId: "s" })
      .catch(() => undefined);
    expect(await cancelled).toBeGreaterThan(0);
    expect(await statusOf(store, "s")).toBe("failed");
    // The fleet serves the child's flow: a child of a cancelled parent must not do its work.
    const [childId = ""] = (await store.listRuns({ runIdPrefix: "s." })).runs.map((r) => r.runId);
    expect(childId).not.toBe("");
    await serve(store, registry, [child] as never, async () => (await statusOf(store, childId)) !== "running", 1_500);
    expect(fetched).toEqual([]);
  }, 15_000);

  it("a child that ends as soon as it is saved, before its parent's next write: the parent still gets its end", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const parent = new Flow("eager", { state: Out })
      .node("spawn", async (_s, ctx) => {
        const got = await ctx.startChild(child, { source: "quick" });
        return { words: got.words };
      })
      .end("spawn");
    const store = new MemoryCheckpointStore();
    // Another process's worker picks the child up at once and ends it before the parent's process writes again
    // (its saves are slow: a network hop).
    const slow = storeWith(store, {
      save: async (runId, step, row, lease) => {
        if (runId === "e") await new Promise((resolve) => setTimeout(resolve, 200));
        await store.save(runId, step, row, lease);
        // The child's step 0, saved with no lease for the fleet: taken and ended at once.
        if (runId.startsWith("e.") && step === 0)
          await serve(store, registry, [child] as never, async () => (await statusOf(store, runId)) === "done");
      },
      sendEvent: (runId, event) => store.sendEvent(runId, event),
      inbox: (runId, from) => store.inbox(runId, from),
    });
    await runnerOn(slow, registry).run(parent, {}, { runId: "e" });
    expect(fetched).toEqual(["quick"]);
    await serve(store, registry, [parent, child] as never, async () => (await statusOf(store, "e")) !== "running");
    expect(await statusOf(store, "e")).toBe("done");
  }, 15_000);

  it("a cancel whose cascade the store failed halfway: the children it left are cancelled before they do any work", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const parent = new Flow("fan", { state: Out })
      .node("spawn", async (_s, ctx) => {
        await Promise.all(["a", "b"].map((source) => ctx.startChild(child, { source })));
        return {};
      })
      .end("spawn");
    const store = new MemoryCheckpointStore();
    await runnerOn(store, registry).run(parent, {}, { runId: "f" });
    const children = (await store.listRuns({ runIdPrefix: "f." })).runs.map((r) => r.runId);
    expect(children).toHaveLength(2);
    // The store fails once, as the cascade reads the first child.
    let failures = 1;
    const flaky = storeWith(store, {
      latest: async (runId) => {
        if (children.includes(runId) && failures-- > 0) throw new StoreUnavailable(`connection reset reading ${runId}`);
        return store.latest(runId);
      },
      sendEvent: (runId, event) => store.sendEvent(runId, event),
      inbox: (runId, from) => store.inbox(runId, from),
    });
    await runnerOn(flaky, registry)
      .cancel(parent, "f", "stop all")
      .catch(() => undefined);
    // The operator cancels again (or the parent's cancel is retried): the children must end cancelled.
    await runnerOn(store, registry)
      .cancel(parent, "f", "stop all")
      .catch(() => undefined);
    await serve(store, registry, [child] as never, async () => false, 500);
    for (const id of children) expect(await statusOf(store, id)).toBe("failed");
    expect(fetched).toEqual([]);
  }, 15_000);

  it("a detached child under a run id an unrelated run of its flow holds is refused, not taken for started", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const store = new MemoryCheckpointStore();
    // A standalone run of the child's flow, started by someone else, under the id the parent will ask for.
    await runnerOn(store, registry).run(child, { source: "someone else's" }, { runId: "report-2024" });
    const parent = new Flow("kicker", { state: Out })
      .node("kick", async (_s, ctx) => {
        await ctx.startChild(child, { source: "mine" }, { runId: "report-2024", detached: true });
        return { note: "kicked" };
      })
      .end("kick");
    const outcome = await runnerOn(store, registry)
      .run(parent, {}, { runId: "k" })
      .then(
        (result) => result.status,
        (error: Error) => error.name,
      );
    // The doc: a step 0 saved by another run is CheckpointConflict; the parent must not go on as if "mine" started.
    expect(outcome, `fetched ${fetched}`).not.toBe("done");
  });

  it("a detached child whose start's record did not land (its parent's worker died): the recovery takes it for started", async () => {
    const fetched: string[] = [];
    const { registry, child } = research(fetched);
    const parent = new Flow("kicker2", { state: Out })
      .node("kick", async (_s, ctx) => {
        await ctx.startChild(child, { source: "mine" }, { runId: "report-2025", detached: true });
        return { note: "kicked" };
      })
      .end("kick");
    const store = new MemoryCheckpointStore();
    let dead = false;
    const dying = storeWith(store, {
      save: async (runId, step, row, lease) => {
        if (dead) return forever();
        await store.save(runId, step, row, lease);
        if (runId === "report-2025") {
          dead = true;
          // The lease its dead worker took with the child's step 0 runs out (as a real one does after its length).
          await store.release(runId, row.segment, lease?.owner ?? "");
        }
      },
      recordCall: async (runId, segment, seq, sealed) => {
        if (dead) return forever();
        return store.recordCall(runId, segment, seq, sealed);
      },
      release: async (runId, segment, owner) => (dead ? forever() : store.release(runId, segment, owner)),
      sendEvent: (runId, event) => store.sendEvent(runId, event),
      inbox: (runId, from) => store.inbox(runId, from),
    });
    void runnerOn(dying, registry).run(parent, {}, { runId: "k2" });
    await until(() => dead, 2_000);
    const done = await runnerOn(store, registry).recover(parent, "k2", { takeOver: true });
    expect(done).toMatchObject({ status: "done", state: { note: "kicked" } });
    await serve(store, registry, [child] as never, async () => (await statusOf(store, "report-2025")) === "done");
    expect(fetched).toEqual(["mine"]);
  });
});
