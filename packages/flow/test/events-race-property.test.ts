import { type CheckpointStore, MemoryCheckpointStore, sendEvent, ToolRegistry } from "@durable/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";

// An event sent at any point of a worker's drive (between any two of its store operations: before its inbox read,
// between the read and the waiting save, during a tool, after the save) is never missed: once the drive returns,
// the run is done or claimable by the next worker, which finishes it; each tool runs once.

/** `inner` as one worker sees it, with `hook` run after its `at`-th operation (reads and writes alike). */
function racing(inner: MemoryCheckpointStore, at: number, hook: () => Promise<void>): CheckpointStore {
  let ops = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || prop === "listUnfinished") return value?.bind?.(target) ?? value;
      return async (...args: unknown[]) => {
        const result = await value.apply(target, args);
        if (++ops === at) await hook();
        return result;
      };
    },
  }) as CheckpointStore;
}

describe("an event sent at any point of a drive", () => {
  it("is never missed: the run ends, each tool once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        fc.boolean(),
        async (at, parallel, recovering) => {
          const inner = new MemoryCheckpointStore();
          const ran: string[] = [];
          const registry = new ToolRegistry()
            .tool("prep", () => void ran.push("prep"))
            .tool("ship", (args: { how: unknown }) => void ran.push(`ship ${JSON.stringify(args.how)}`));
          const pay = workflow("pay", { input: z.object({}) }, async (ctx) => {
            await ctx.call("prep", {});
            const waits = [ctx.waitForEvent("paid")];
            if (parallel) waits.push(ctx.waitForEvent("other", { timeoutMs: 0 }));
            const [paid] = await Promise.all(waits);
            await ctx.call("ship", { how: paid?.status === "received" ? paid.payload : null });
          });
          let sent = false;
          const send = async () => {
            if (sent) return;
            sent = true;
            await sendEvent({ checkpoints: inner, checkpointKey: KEY, runId: "r", name: "paid", payload: "card" });
          };
          if (recovering) {
            // The racing drive is a recovery: the run waits, an event of another name wakes it, a worker claims it.
            await runnerOn(inner, registry).run(pay, {}, { runId: "r" });
            await sendEvent({ checkpoints: inner, checkpointKey: KEY, runId: "r", name: "noise", payload: null });
            await runnerOn(racing(inner, at, send), registry).recover(pay, "r");
          } else await runnerOn(racing(inner, at, send), registry).run(pay, {}, { runId: "r" });
          await send();
          // The next workers take only claimable runs: a run left waiting although its event is there would stay.
          const runner = runnerOn(inner, registry);
          for (let i = 0; i < 3 && (await inner.latest("r")).status !== "done"; i++)
            await runner.recoverAll(pay).catch(() => undefined);
          expect((await inner.latest("r")).status, `event after op ${at}`).toBe("done");
          expect(ran).toEqual(["prep", 'ship "card"']);
        },
      ),
      { numRuns: 100 },
    );
  }, 60_000);
});
