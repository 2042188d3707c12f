import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { idempotencyKey, ToolRegistry } from "@durable/core";
import { Call, Flow } from "@durable/flow";
import { z } from "zod";

const Order = z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") });
type Order = z.infer<typeof Order>;
const args = (o: Order) => ({ show: o.show, seats: o.seats });

/** The seed's tickets flow: hold seats, charge the card, email the tickets (the soak and the bench run it under other names). */
export function ticketsFlow(name = "tickets"): Flow<Order> {
  return new Flow(name, { state: Order })
    .node("hold", new Call("hold_seats", { args, into: "note" }))
    .node("pay", new Call("charge_card", { args, into: "note" }))
    .node("send", new Call("email_tickets", { args: (o) => ({ show: o.show }), into: "note" }))
    .edge("hold", "pay")
    .edge("pay", "send")
    .end("send");
}

export const tickets: Flow<Order> = ticketsFlow();

/** Options of `checkoutFlow`: the version its runs seal, and a last node that mails a receipt. */
export interface CheckoutOptions {
  readonly version?: number;
  /** A `receipt` node after the checkout that calls `send_receipt`: a node a later version adds. */
  readonly receipt?: boolean;
}

/**
 * The same tools with the charge and the email in one node, one call after the other: a worker killed
 * inside the email leaves the charge's result stored (it went with the email's `started` record), so its
 * recovery replays it. (In the three-node flow a call's result lands with the next node's first record.)
 */
export function checkoutFlow(name: string, { version, receipt = false }: CheckoutOptions = {}): Flow<Order> {
  const flow = new Flow(name, { state: Order, ...(version === undefined ? {} : { version }) })
    .node("hold", new Call("hold_seats", { args, into: "note" }))
    .node("checkout", async (o, ctx) => {
      await ctx.call("charge_card", args(o));
      return { note: String(await ctx.call("email_tickets", { show: o.show })) };
    })
    .edge("hold", "checkout");
  if (!receipt) return flow.end("checkout");
  return flow
    .node("receipt", new Call("send_receipt", { args: (o) => ({ show: o.show }), into: "note" }))
    .edge("checkout", "receipt")
    .end("receipt");
}

/** One charge as the card processor logs it. */
export interface Charge {
  readonly runId: string;
  readonly key: string;
  readonly cents: number;
}

/** A card processor that applies each idempotency key once, as a real payment API does. */
export class CardProcessor {
  constructor(readonly logPath: string) {}

  charges(): Charge[] {
    if (!existsSync(this.logPath)) return [];
    return readFileSync(this.logPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Charge);
  }

  charge(runId: string, key: string, cents: number): number {
    const before = this.charges().find((c) => c.key === key);
    if (before !== undefined) return before.cents;
    appendFileSync(this.logPath, `${JSON.stringify({ runId, key, cents })}\n`);
    return cents;
  }
}

/** The tickets tools: the seat hold is idempotent; the card is charged with the call's idempotency key. */
export function ticketsRegistry(card: CardProcessor, insideEmail?: (runId: string) => void): ToolRegistry {
  return new ToolRegistry()
    .tool("hold_seats", (a: { show: string; seats: number }) => `held ${a.seats} seats for ${a.show}`, {
      idempotent: true,
    })
    .tool(
      "charge_card",
      (a: { seats: number }, ctx) => `charged $${card.charge(ctx.runId, idempotencyKey(), a.seats * 4000) / 100}`,
    )
    .tool("email_tickets", (a: { show: string }, ctx) => {
      insideEmail?.(ctx.runId);
      return `mailed the tickets for ${a.show}`;
    });
}
