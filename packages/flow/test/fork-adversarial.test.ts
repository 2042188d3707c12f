import { MemoryCheckpointStore, RecoveryNeedsDecision, ToolRegistry } from "@durable/core";
import { DyingStore, settle } from "@durable/test-utils/stores";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow } from "../src/index.js";
import { runnerOn } from "./helpers.js";

// Forks attacked: each test here failed when it was written.

const State = z.object({ n: z.number() });

describe("a fork's call in doubt stays in doubt", () => {
  it("an idempotent tool's call in doubt is not run again in the fork under another idempotency key without a decision", async () => {
    const store = new MemoryCheckpointStore();
    // An idempotent tool: safe to run again *under the same key*, which its system dedupes (a payment API).
    const keys: string[] = [];
    const registry = new ToolRegistry().tool(
      "charge",
      (_args: unknown, ctx: { idempotencyKey: string }) => void keys.push(ctx.idempotencyKey),
      { idempotent: true },
    );
    const flow = new Flow("pay", { state: State })
      .node("pay", async (state, ctx) => {
        await ctx.call("charge", { cents: 100 });
        return { n: state.n + 1 };
      })
      .end("pay");
    // The original's worker dies after the charge ran at the tool's system and its `started` landed, before `done`.
    const dying = new DyingStore(store, { op: "recordCall", kind: "done", tool: "charge", when: "before" });
    void runnerOn(dying, registry).run(flow, { n: 0 }, { runId: "orig" });
    await settle();
    expect(dying.dead).toBe(true);
    expect(keys.length).toBe(1);
    const runner = runnerOn(store, registry);
    const latest = await store.latest("orig");
    await runner.fork(flow, "orig", { fromStep: latest.step, runId: "fork", by: "ops" });
    // Recovering the original would run it again under the same key: the tool's system dedupes it. The fork's
    // rerun is under the fork's key: a second charge at the tool's system, decided by nobody. It must either stop
    // for a decision or reuse the key the attempt in doubt was made with.
    const outcome = await runner.recover(flow, "fork").catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(RecoveryNeedsDecision);
    // The decision is asked with the key the attempt in doubt was made under: the original's.
    expect((outcome as RecoveryNeedsDecision).calls.map((call) => call.idempotencyKey)).toEqual(keys);
    expect(keys.length).toBe(1);
    // Decided, it runs again (under the fork's key): someone decided it.
    const [call] = (outcome as RecoveryNeedsDecision).calls;
    expect(await runner.recover(flow, "fork", { decide: { [call!.callId]: "rerun" }, by: "ops" })).toMatchObject({
      status: "done",
    });
    expect(keys.length).toBe(2);
  });
});
