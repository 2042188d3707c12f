import { appendFileSync } from "node:fs";
import { ToolRegistry, idempotencyKey } from "@durable/core";
import { Call, Flow } from "@durable/flow";
import { z } from "zod";

const Order = z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") });
type Order = z.infer<typeof Order>;
const args = (o: Order) => ({ show: o.show, seats: o.seats });

/**
 * The tickets flow under the name of one worker slot: a restarted worker
 * recovers its own slot's runs only, never a run another live worker drives.
 */
export function soakFlow(slot: number): Flow<Order> {
  return new Flow(`soak-${slot}`, { state: Order })
    .node("hold", new Call("hold_seats", { args, into: "note" }))
    .node("pay", new Call("charge_card", { args, into: "note" }))
    .node("send", new Call("email_tickets", { args: (o) => ({ show: o.show }), into: "note" }))
    .edge("hold", "pay")
    .edge("pay", "send")
    .end("send");
}

/** Tools that write each execution, with its idempotency key, to a ledger shared by every worker. */
export const NON_IDEMPOTENT: ReadonlySet<string> = new Set(["charge_card", "email_tickets"]);

export function soakTools(ledger: string): ToolRegistry {
  const tool = (name: string) => async (_args: unknown, ctx: { runId: string; callId: string }) => {
    appendFileSync(ledger, `${ctx.runId} ${ctx.callId} ${name} ${idempotencyKey()}\n`);
    // A short wait after the effect, so kills land between a tool's effect and its stored result too.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
    return `${name} done`;
  };
  return new ToolRegistry()
    .tool("hold_seats", tool("hold_seats"), { idempotent: true })
    .tool("charge_card", tool("charge_card"))
    .tool("email_tickets", tool("email_tickets"));
}

export function order(k: number): { show: string; seats: number } {
  return { show: `show-${k % 7}`, seats: 1 + (k % 4) };
}

export const runIdOf = (k: number): string => `soak-${k}`;
