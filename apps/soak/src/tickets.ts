import { appendFileSync } from "node:fs";
import { idempotencyKey, ToolRegistry } from "@durable/core";
import { ticketsFlow } from "@durable-apps/shared/tickets";

/**
 * The tickets flow under the name of one worker slot: a restarted worker
 * recovers its own slot's runs only, never a run another live worker drives.
 */
export function soakFlow(slot: number): ReturnType<typeof ticketsFlow> {
  return ticketsFlow(`soak-${slot}`);
}

/** Tools that write each execution, with its idempotency key, to a ledger shared by every worker. */
export const NON_IDEMPOTENT: ReadonlySet<string> = new Set(["charge_card", "email_tickets"]);

/** `toolMs`: how long each tool takes after its effect (default a random 0–4 ms). */
export function soakTools(ledger: string, toolMs?: number): ToolRegistry {
  const tool = (name: string) => async (_args: unknown, ctx: { runId: string; callId: string }) => {
    appendFileSync(ledger, `${ctx.runId} ${ctx.callId} ${name} ${idempotencyKey()}\n`);
    // A short wait after the effect, so kills land between a tool's effect and its stored result too.
    await new Promise((resolve) => setTimeout(resolve, toolMs ?? Math.random() * 4));
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
