import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { type CheckpointStore, Executor, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner } from "@durable/flow";
import { trace } from "@opentelemetry/api";
import { z } from "zod";

/** The order flow of the trace-across-a-SIGKILL test, and a runner whose tools say what they do in an effects file. */

export const KEY = "otel-kill-test-key-0123456789abcdef";
/** The workers' lease: the second worker takes the run about this long after the first is killed. */
export const LEASE_MS = 1_000;
export const RUN_ID = "order-1";

const State = z.object({ order: z.string(), note: z.string().default("") });

/** Three supersteps of one tool call each: reserve → charge → mail. */
export const orders = new Flow("orders", { state: State })
  .node("reserve", async (s, ctx) => ({ note: await ctx.call<string>("reserve", { order: s.order }) }))
  .node("charge", async (s, ctx) => ({ note: await ctx.call<string>("charge", { order: s.order }) }))
  .node("mail", async (s, ctx) => ({ note: await ctx.call<string>("mail", { order: s.order }) }))
  .edge("reserve", "charge")
  .edge("charge", "mail")
  .end("mail");

/**
 * A runner on `store` whose tools append "<tool> started" and "<tool> done"
 * to `effects`, around their "HTTP" work in a span of the app's own
 * (`POST /<tool>`). With `hang`, `charge` never gets past "started": its
 * process is killed there. `charge` is idempotent (a payment API that takes an
 * idempotency key), so the worker that takes the run over runs it again.
 */
export function runner(store: CheckpointStore, effects: string, hang = false): FlowRunner {
  const tool =
    (name: string) =>
    ({ order }: { order: string }): Promise<string> =>
      trace.getTracer("app").startActiveSpan(`POST /${name}`, async (span) => {
        appendFileSync(effects, `${name} started\n`);
        if (hang && name === "charge") await new Promise<never>(() => undefined);
        appendFileSync(effects, `${name} done\n`);
        span.end();
        return `${name} ${order}`;
      });
  const registry = new ToolRegistry()
    .tool("reserve", tool("reserve"))
    .tool("charge", tool("charge"), { idempotent: true })
    .tool("mail", tool("mail"));
  return new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY, lease: { ms: LEASE_MS } });
}

/** What the tools did, as they wrote it. */
export function effects(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}
