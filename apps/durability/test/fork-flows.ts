import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { type CheckpointStore, Executor, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";

/** The flows of the fork tests, and a runner whose tools append what they do to an effects file. */

export const KEY = "fork-test-key-0123456789abcdef-xyz";
const State = z.object({ note: z.string(), count: z.number().int() });
export const START = { note: "first", count: 0 };

/** Five supersteps of one node each, each calling `effect` with a line that says which code wrote it. */
export function fiveSteps(version: string) {
  const names = ["s1", "s2", "s3", "s4", "s5"];
  let flow = new Flow("five", { state: State });
  for (const name of names)
    flow = flow.node(name, async (state, ctx) => {
      await ctx.call("effect", { line: `${version} ${name} ${state.note}` });
      return { count: state.count + 1 };
    });
  for (const [i, name] of names.slice(1).entries()) flow = flow.edge(names[i] ?? "", name);
  return flow.end("s5");
}

/** `first`, then a superstep that calls `a`, then `b`. */
export const twoCalls = new Flow("two-calls", { state: State })
  .node("first", async (_state, ctx) => void (await ctx.call("effect", { line: "first" })))
  .node("both", async (_state, ctx) => {
    await ctx.call("a", {});
    await ctx.call("b", {});
  })
  .edge("first", "both")
  .end("both");

/**
 * A runner on `store` whose tools append to `effects`; `b` then waits on `inB` (a process killed there), under
 * leases of `leaseMs` (default 30 s).
 */
export function runner(
  store: CheckpointStore,
  effects: string,
  inB?: () => Promise<void>,
  leaseMs?: number,
): FlowRunner {
  const effect = (line: string) => appendFileSync(effects, `${line}\n`);
  const registry = new ToolRegistry()
    .tool("effect", (args: { line: string }) => effect(args.line))
    .tool("a", () => effect("a"))
    .tool("b", async () => {
      effect("b");
      await inB?.();
    });
  const lease = leaseMs === undefined ? {} : { lease: { ms: leaseMs } };
  return new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, ...lease });
}

/** The lease of the worker the tests kill inside `b`. */
export const KILLED_LEASE_MS = 1_000;

/** What the tools did, as they wrote it. */
export function effects(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}
