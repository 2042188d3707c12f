import { type CheckpointStore, InvalidInput, MemoryCheckpointStore, PatchRemoved, sendEvent } from "@durable/core";
import { readLatest, Sealer } from "@durable/core/runner";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, type NodeContext, workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { beforeStarted, dies, patchAnswers, toolsOf } from "./patch-fixtures.js";

// Patches (`ctx.patched(id)`) for code changed while runs are in flight. The verdicts come from what the tools did
// (each tool pushes its name to `effects` when it runs), not from the library's own records. Wherever a crash falls:
// patched-crash-property.test.ts.

const Empty = z.object({});

const RECEIPTS = ["charge", "receipt", "receiptV2", "archive", "extra"];

/** A workflow of one name whose body is `fn`: each version of the code is a new `workflow` object. */
const receipts = (fn: (ctx: NodeContext) => Promise<string>) => workflow("receipts", { input: Empty }, fn);

/** The code before the patch: a receipt, then archive. */
const v1 = receipts(async (ctx) => {
  await ctx.call("receipt", {});
  await ctx.call("archive", {});
  return "v1";
});

/** The patched code: the new receipt for runs that reach it on this code. */
const v2 = receipts(async (ctx) => {
  const isNew = await ctx.patched("receipt-v2");
  await ctx.call(isNew ? "receiptV2" : "receipt", {});
  await ctx.call("archive", {});
  return isNew ? "new" : "old";
});

async function statusOf(store: CheckpointStore, runId: string) {
  const latest = await readLatest(store, Sealer.withKeys(KEY), runId);
  return { status: latest.status, error: (latest.data as { error?: string }).error };
}

describe("ctx.patched", () => {
  it("a new run on patched code: true, recorded, and true again after a crash past it; the new branch ran once", async () => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    const crash = beforeStarted("archive");
    expect(await dies(store, registry, crash, (runner) => runner.run(v2, {}, { runId: "r" }))).toBe("died");
    expect([ran("receiptV2"), ran("archive")]).toEqual([1, 0]);
    expect(await patchAnswers(store, "r")).toEqual({ "receipt-v2": true });

    const done = await runnerOn(store, registry).recover(v2, "r");
    expect(done).toMatchObject({ status: "done", state: { output: "new" } });
    expect([ran("receipt"), ran("receiptV2"), ran("archive")]).toEqual([0, 1, 1]);
  });

  it("a run whose old code went past the point: false, the old branch goes on, and none of its calls runs twice", async () => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    expect(await dies(store, registry, beforeStarted("archive"), (r) => r.run(v1, {}, { runId: "r" }))).toBe("died");
    expect(ran("receipt")).toBe(1);

    const done = await runnerOn(store, registry).recover(v2, "r");
    expect(done).toMatchObject({ status: "done", state: { output: "old" } });
    expect([ran("receipt"), ran("receiptV2"), ran("archive")]).toEqual([1, 0, 1]);
    expect(await patchAnswers(store, "r")).toEqual({ "receipt-v2": false });
  });

  it("a run whose old code stopped just before the point: true, since nothing past it ran", async () => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    expect(await dies(store, registry, beforeStarted("receipt"), (r) => r.run(v1, {}, { runId: "r" }))).toBe("died");
    const done = await runnerOn(store, registry).recover(v2, "r");
    expect(done).toMatchObject({ status: "done", state: { output: "new" } });
    expect([ran("receipt"), ran("receiptV2"), ran("archive")]).toEqual([0, 1, 1]);
  });

  it("in a flow: each node of a superstep decides for itself, a node named `a:b` never passing for `a`", async () => {
    const Count = z.object({ n: z.number() });
    const tools = toolsOf(["ab1", "ab2", "aNew", "abNew"]);
    const shape = (a: (ctx: NodeContext) => Promise<void>, ab: (ctx: NodeContext) => Promise<void>) =>
      new Flow("pair", { state: Count })
        .node("start", () => ({}))
        .node("a", async (_s, ctx) => void (await a(ctx)))
        .node("a:b", async (_s, ctx) => void (await ab(ctx)))
        .edge("start", ["a", "a:b"])
        .end("a", "a:b");
    const before = shape(
      async () => {},
      async (ctx) => {
        await ctx.call("ab1", {});
        await ctx.call("ab2", {});
      },
    );
    const patchedOne = (newTool: string) => async (ctx: NodeContext) => {
      if (await ctx.patched("p")) await ctx.call(newTool, {});
    };
    const after = shape(patchedOne("aNew"), async (ctx) => {
      await patchedOne("abNew")(ctx);
      await ctx.call("ab1", {});
      await ctx.call("ab2", {});
    });
    const store = new MemoryCheckpointStore();
    const crash = beforeStarted("ab2");
    expect(await dies(store, tools.registry, crash, (r) => r.run(before, { n: 0 }, { runId: "f" }))).toBe("died");

    expect(await runnerOn(store, tools.registry).recover(after, "f")).toMatchObject({ status: "done" });
    expect(["ab1", "ab2", "aNew", "abNew"].map(tools.ran)).toEqual([1, 1, 1, 0]);
  });

  it("asked twice in one node, it gives the same answer, recorded once", async () => {
    const store = new MemoryCheckpointStore();
    const { registry } = toolsOf(RECEIPTS);
    expect(await dies(store, registry, beforeStarted("archive"), (r) => r.run(v1, {}, { runId: "r" }))).toBe("died");
    const twice = receipts(async (ctx) => {
      const first = await ctx.patched("receipt-v2");
      await ctx.call("receipt", {});
      const second = await ctx.patched("receipt-v2");
      await ctx.call("archive", {});
      return `${first} ${second}`;
    });
    expect(await runnerOn(store, registry).recover(twice, "r")).toMatchObject({ state: { output: "false false" } });
    const records = (await store.calls("r")).filter((row) => row.sealed.includes('"durable:patch"'));
    expect(records).toHaveLength(1);
  });
});

describe("ctx.patched in a workflow that sleeps or waits", () => {
  /** Waits out the run's sleep, then until the store lists it claimable. */
  async function wake(store: CheckpointStore, until_: number): Promise<void> {
    await sleep(Math.max(0, until_ - Date.now()));
    await until(async () => {
      for await (const id of store.listUnfinished("nap", { claimable: true })) if (id === "w") return true;
      return false;
    }, 5_000);
  }
  const nap = (fn: (ctx: NodeContext) => Promise<string>) => workflow("nap", { input: Empty }, fn);
  const old = nap(async (ctx) => {
    await ctx.call("charge", {});
    await ctx.sleep(100);
    await ctx.call("receipt", {});
    return "old code";
  });

  async function asleepOnOldCode() {
    const store = new MemoryCheckpointStore();
    const tools = toolsOf(RECEIPTS);
    const asleep = await runnerOn(store, tools.registry).run(old, {}, { runId: "w" });
    expect(asleep).toMatchObject({ status: "asleep" });
    await wake(store, (asleep as { until: number }).until);
    return { store, ...tools };
  }

  it("a patch before the sleep the old code went past: false, and the new branch never runs", async () => {
    const { store, registry, ran } = await asleepOnOldCode();
    const before = nap(async (ctx) => {
      await ctx.call("charge", {});
      const isNew = await ctx.patched("extra-step");
      if (isNew) await ctx.call("extra", {});
      await ctx.sleep(100);
      await ctx.call("receipt", {});
      return String(isNew);
    });
    expect(await runnerOn(store, registry).recover(before, "w")).toMatchObject({ state: { output: "false" } });
    expect(["charge", "extra", "receipt"].map(ran)).toEqual([1, 0, 1]);
  });

  it("a patch after the sleep, where the old code stopped: true, and the new branch runs once", async () => {
    const { store, registry, ran } = await asleepOnOldCode();
    const afterSleep = nap(async (ctx) => {
      await ctx.call("charge", {});
      await ctx.sleep(100);
      const isNew = await ctx.patched("receipt-v2");
      await ctx.call(isNew ? "receiptV2" : "receipt", {});
      return String(isNew);
    });
    expect(await runnerOn(store, registry).recover(afterSleep, "w")).toMatchObject({ state: { output: "true" } });
    expect(["charge", "receipt", "receiptV2"].map(ran)).toEqual([1, 0, 1]);
  });

  it("a patch before a wait the old code began (only its deadline recorded): false", async () => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    const waits = (fn: (ctx: NodeContext) => Promise<string>) => workflow("waits", { input: Empty }, fn);
    const waiting = await runnerOn(store, registry).run(
      waits(async (ctx) => {
        await ctx.call("charge", {});
        await ctx.waitForEvent("go", { timeoutMs: 60_000 });
        return "old code";
      }),
      {},
      { runId: "e" },
    );
    expect(waiting).toMatchObject({ status: "asleep" });
    await sendEvent({ checkpoints: store, checkpointKey: KEY, runId: "e", name: "go", payload: 1 });
    const before = waits(async (ctx) => {
      await ctx.call("charge", {});
      const isNew = await ctx.patched("extra-step");
      if (isNew) await ctx.call("extra", {});
      await ctx.waitForEvent("go", { timeoutMs: 60_000 });
      return String(isNew);
    });
    expect(await runnerOn(store, registry).recover(before, "e")).toMatchObject({ state: { output: "false" } });
    expect(["charge", "extra"].map(ran)).toEqual([1, 0]);
  });
});

describe("a removed patch", () => {
  /** A run on v1 that died past the point, then recovered on v2 (answered false) and died again before archive. */
  async function tookOldBranch() {
    const store = new MemoryCheckpointStore();
    const tools = toolsOf(RECEIPTS);
    const crash = beforeStarted("archive");
    expect(await dies(store, tools.registry, crash, (r) => r.run(v1, {}, { runId: "r" }))).toBe("died");
    expect(await dies(store, tools.registry, crash, (r) => r.recover(v2, "r"))).toBe("died");
    expect(await patchAnswers(store, "r")).toEqual({ "receipt-v2": false });
    return { store, ...tools };
  }

  it("code that dropped the old branch fails the run with PatchRemoved before the new branch runs", async () => {
    const { store, registry, ran } = await tookOldBranch();
    const v3 = receipts(async (ctx) => {
      await ctx.call("receiptV2", {});
      await ctx.call("archive", {});
      return "v3";
    });
    const failed = runnerOn(store, registry).recover(v3, "r");
    await expect(failed).rejects.toThrow(PatchRemoved);
    await expect(failed).rejects.toThrow(
      /Run "r": node "body" took the old branch of patch "receipt-v2".*keep the old branch/,
    );
    expect(["receipt", "receiptV2", "archive"].map(ran)).toEqual([1, 0, 0]);
    expect(await statusOf(store, "r")).toMatchObject({
      status: "failed",
      error: expect.stringContaining("PatchRemoved"),
    });

    // With the old branch back, a retry goes on with it: nothing ran twice, nothing of the new branch ran.
    expect(await runnerOn(store, registry).retry(v2, "r")).toMatchObject({ state: { output: "old" } });
    expect(["receipt", "receiptV2", "archive"].map(ran)).toEqual([1, 0, 1]);
  });

  it("fails it when the node ends without a new call, and when its code catches the error", async () => {
    for (const v3 of [
      receipts(async (ctx) => {
        await ctx.call("receipt", {});
        return "no more calls";
      }),
      receipts(async (ctx) => {
        await ctx.call("receiptV2", {}).catch(() => undefined);
        return "caught";
      }),
    ]) {
      const { store, registry, ran } = await tookOldBranch();
      await expect(runnerOn(store, registry).recover(v3, "r")).rejects.toThrow(PatchRemoved);
      expect(await statusOf(store, "r")).toMatchObject({ status: "failed" });
      expect(["receipt", "receiptV2", "archive"].map(ran)).toEqual([1, 0, 0]);
    }
  });

  it("a patch answered true that the code no longer asks is fine: the code kept the new branch", async () => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    expect(await dies(store, registry, beforeStarted("archive"), (r) => r.run(v2, {}, { runId: "r" }))).toBe("died");
    const v3 = receipts(async (ctx) => {
      await ctx.call("receiptV2", {});
      await ctx.call("archive", {});
      return "v3";
    });
    expect(await runnerOn(store, registry).recover(v3, "r")).toMatchObject({ status: "done", state: { output: "v3" } });
    expect(["receipt", "receiptV2", "archive"].map(ran)).toEqual([0, 1, 1]);
  });
});

describe("patch ids", () => {
  it.each([
    ["empty", ""],
    ["201 characters", "x".repeat(201)],
    ["a number", 42],
    ["a lone surrogate", "v2\ud800"],
    ["a control character", "v2\u0000"],
  ])("%s is InvalidInput, which fails the run", async (_, id) => {
    const store = new MemoryCheckpointStore();
    const { registry, ran } = toolsOf(RECEIPTS);
    const bad = receipts(async (ctx) => {
      if (await ctx.patched(id as string)) await ctx.call("receiptV2", {});
      return "bad";
    });
    await expect(runnerOn(store, registry).run(bad, {}, { runId: "r" })).rejects.toThrow(InvalidInput);
    expect(ran("receiptV2")).toBe(0);
    expect(await statusOf(store, "r")).toMatchObject({ status: "failed" });
  });

  it("200 characters of any text is an id", async () => {
    const id = "é🙂:".repeat(50);
    const store = new MemoryCheckpointStore();
    const { registry } = toolsOf(RECEIPTS);
    const good = receipts(async (ctx) => String(await ctx.patched(id)));
    expect(await runnerOn(store, registry).run(good, {}, { runId: "r" })).toMatchObject({ state: { output: "true" } });
  });
});
