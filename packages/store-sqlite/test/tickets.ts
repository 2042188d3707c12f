import { appendFileSync } from "node:fs";
import { Executor, ToolRegistry, type CheckpointStore } from "@durable/core";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { z } from "zod";

export const KEY = "sqlite-tests-key-0123456789abcdef-xyz";

const Order = z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") });
type Order = z.infer<typeof Order>;
const args = (o: Order) => ({ show: o.show, seats: o.seats });

/** The seed's tickets flow. */
export const tickets = new Flow("tickets", { state: Order })
  .node("hold", new Call("hold_seats", { args, into: "note" }))
  .node("pay", new Call("charge_card", { args, into: "note" }))
  .node("send", new Call("email_tickets", { args: (o) => ({ show: o.show }), into: "note" }))
  .edge("hold", "pay")
  .edge("pay", "send")
  .end("send");

/**
 * The tickets tools. Each appends `<runId> <tool>` to the side-effect file as
 * it starts, so a test counts real executions across processes. `hang` names
 * a tool that never returns (a worker held inside it).
 */
export function ticketsRegistry(sideEffects: string, hang?: { tool: string; onEnter?: () => void }): ToolRegistry {
  const tool = (name: string, result: (a: Record<string, unknown>) => string) => async (a: Record<string, unknown>, ctx: { runId: string }) => {
    appendFileSync(sideEffects, `${ctx.runId} ${name}\n`);
    if (hang?.tool === name) {
      hang.onEnter?.();
      await new Promise(() => {});
    }
    return result(a);
  };
  return new ToolRegistry()
    .tool("hold_seats", tool("hold_seats", (a) => `held ${String(a["seats"])}`), { idempotent: true })
    .tool("charge_card", tool("charge_card", (a) => `charged ${Number(a["seats"]) * 40}`))
    .tool("email_tickets", tool("email_tickets", (a) => `mailed ${String(a["show"])}`));
}

export function runner(store: CheckpointStore, registry: ToolRegistry): FlowRunner {
  return new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });
}
