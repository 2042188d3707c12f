import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Executor, idempotencyKey, type JsonValue, ToolRegistry } from "../src/index.js";
import { callIdOf, CallScope, freshPlan, planReplay, readCallLog } from "../src/runner.js";
import { sealer, startRun } from "./helpers.js";

const ITEMS = ["apple", "pear", "plum"];

/** A node's calls: `Promise.all(items.map(async (i) => charge(await price(i))))`, plus two identical mails. */
async function shoppingNode(call: (tool: string, args: JsonValue) => Promise<JsonValue>): Promise<JsonValue[]> {
  return Promise.all([
    ...ITEMS.map(async (item) => call("charge", { item, cents: (await call("price", { item })) as number })),
    call("mail", { to: "ada" }),
    call("mail", { to: "ada" }),
  ]);
}

/** Tools whose latency is chosen per call by `delay`, recording each run with its idempotency key. */
function tools(
  delay: (tool: string, args: JsonValue) => number,
  ran: Array<{ tool: string; args: JsonValue; key: string }>,
) {
  const tool = (name: string, result: (args: JsonValue) => JsonValue) => async (args: JsonValue) => {
    ran.push({ tool: name, args, key: idempotencyKey() });
    await new Promise((resolve) => setTimeout(resolve, delay(name, args)));
    return result(args);
  };
  return new ToolRegistry()
    .tool(
      "price",
      tool("price", (a) => (a as { item: string }).item.length * 100),
    )
    .tool(
      "charge",
      tool("charge", (a) => ({ charged: a })),
    )
    .tool(
      "mail",
      tool("mail", () => "sent"),
    );
}

describe("call identity", () => {
  it("names a call by round, node, tool and arguments, whatever order calls are issued or finish in", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(6), { minLength: 16, maxLength: 16 }),
        fc.array(fc.nat(6), { minLength: 16, maxLength: 16 }),
        async (first, second) => {
          const { store, run } = await startRun();
          const ran: Array<{ tool: string; args: JsonValue; key: string }> = [];
          const latency = (delays: number[]) => {
            let n = 0;
            return () => delays[n++ % delays.length]!;
          };
          // The first worker finishes every call; the log then holds each one's result.
          const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} });
          const executor = new Executor(tools(latency(first), ran));
          const call = async (tool: string, args: JsonValue) => {
            const outcome = await executor.call(scope, "shop", tool, args);
            return outcome.status === "ok" ? (outcome.value as JsonValue) : null;
          };
          const before = await shoppingNode(call);
          // Another worker replays the same round with other latencies: every call replays its own result.
          await run.flush();
          const plan = planReplay(run.runId, await readCallLog(store, sealer, run.runId, []), 1, executor.registry);
          const replay = new CallScope({ kind: "flow", log: run.log, plan, identity: {} });
          const again = new Executor(tools(latency(second), ran));
          const after = await shoppingNode(async (tool, args) => {
            const outcome = await again.call(replay, "shop", tool, args);
            return outcome.status === "ok" ? (outcome.value as JsonValue) : null;
          });
          expect(after).toEqual(before);
          expect(ran).toHaveLength(3 + 3 + 2); // nothing ran on the second worker
          expect(replay.unreplayed).toEqual([]);
          expect(plan.finished.size).toBe(8);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("gives a call the same idempotency key however calls interleave, and identical calls keys of their own", async () => {
    const keysOf = async (delays: Record<string, number>) => {
      const ran: Array<{ tool: string; args: JsonValue; key: string }> = [];
      const { run } = await startRun();
      const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} });
      const executor = new Executor(tools((tool, args) => delays[`${tool} ${JSON.stringify(args)}`] ?? 0, ran));
      await shoppingNode(async (tool, args) => {
        const outcome = await executor.call(scope, "shop", tool, args);
        return outcome.status === "ok" ? (outcome.value as JsonValue) : null;
      });
      return new Map(ran.filter((r) => r.tool === "charge").map((r) => [JSON.stringify(r.args), r.key]));
    };
    const slowApple = await keysOf({ 'price {"item":"apple"}': 20 });
    const slowPlum = await keysOf({ 'price {"item":"plum"}': 20 });
    expect(slowPlum).toEqual(slowApple);
    expect(new Set(slowApple.values()).size).toBe(3);
  });

  it("tells identical calls apart by occurrence, and changed arguments make another call", () => {
    expect(callIdOf(1, "n", "mail", { to: "ada" }, 0)).not.toBe(callIdOf(1, "n", "mail", { to: "ada" }, 1));
    expect(callIdOf(1, "n", "mail", { to: "ada" })).toBe(callIdOf(1, "n", "mail", { to: "ada" }, 0));
    expect(callIdOf(1, "n", "mail", { to: "ada" })).not.toBe(callIdOf(1, "n", "mail", { to: "bob" }));
    expect(callIdOf(1, "n", "mail", { a: 1, b: 2 })).toBe(callIdOf(1, "n", "mail", { b: 2, a: 1 }));
    // A node or tool name holding the separator cannot pass for another call.
    expect(callIdOf(1, "a:b", "c", {})).not.toBe(callIdOf(1, "a", "b:c", {}));
  });
});
