import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { type CheckpointStore, Executor, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";

// What the tests of a drive that loses its run share, in this process and in the child's: the flow, its tools
// (writing what they do to an effects file) and the runner.

export const KEY = "drive-loses-run-key-0123456789abcdef";
const State = z.object({ note: z.string().default("") });
/** hold (idempotent), then charge (not idempotent). */
export const flow = new Flow("seats", { state: State })
  .node("hold", new Call("hold", { args: () => ({}), into: "note" }))
  .node("charge", new Call("charge", { args: () => ({ cents: 4000 }), into: "note" }))
  .edge("hold", "charge")
  .end("charge");

/** What the tools did, as they wrote it. */
export function effects(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

/**
 * The tools, appending `<tool> <who>` to the effects file as they start. With `hangs`, hold waits until its
 * `ctx.signal` aborts, then appends `hold <who> aborted: <reason>` and throws the reason.
 */
export function tools(path: string, who: string, hangs: boolean): ToolRegistry {
  const hold = async (_args: unknown, ctx: { readonly signal: AbortSignal }) => {
    appendFileSync(path, `hold ${who}\n`);
    if (hangs)
      await new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => {
          const reason: unknown = ctx.signal.reason;
          const text = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
          appendFileSync(path, `hold ${who} aborted: ${text}\n`);
          reject(ctx.signal.reason);
        }),
      );
    return "held";
  };
  const charge = () => {
    appendFileSync(path, `charge ${who}\n`);
    return "charged";
  };
  return new ToolRegistry().tool("hold", hold, { idempotent: true }).tool("charge", charge);
}

/** A runner on `store` whose leases last `ms`: renewed by its keeper every third of that. */
export const runner = (store: CheckpointStore, registry: ToolRegistry, ms = 30_000) =>
  new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, lease: { ms } });
