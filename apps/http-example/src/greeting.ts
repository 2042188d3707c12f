import { appendFileSync } from "node:fs";
import { type CheckpointStore, defineQueue, Executor, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";
import { KEY } from "./key.js";

/** The flow the server starts and the workers run: one tool call. */
export const greeting = new Flow("greeting", {
  state: z.object({ name: z.string().min(1), message: z.string().default("") }),
})
  .node("greet", async (state, ctx) => ({ message: await ctx.call<string>("send_greeting", { name: state.name }) }))
  .end("greet");

/**
 * The queue greeting runs wait on: at most 4 run at once across the fleet,
 * and one per name at a time (the run's concurrency key), whatever the
 * number of workers. The store keeps these limits.
 */
export const greetings = defineQueue("greetings", { concurrency: 4, perKey: 1 });

/**
 * A runner on the store every process shares (server and workers).
 * The tool's effect is a line in `outbox`, as an email sent would be.
 */
export function greetingRunner(store: CheckpointStore, outbox: string): FlowRunner {
  const tools = new ToolRegistry().tool("send_greeting", (args: { name: string }, ctx) => {
    appendFileSync(outbox, `${JSON.stringify({ runId: ctx.runId, name: args.name })}\n`);
    return `hello ${args.name}`;
  });
  return new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
}
