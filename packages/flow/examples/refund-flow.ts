import { z } from "zod";
import { Call, Flow } from "../src/index.js";

const DAY = 24 * 60 * 60 * 1000;
const Refund = z.object({
  orderId: z.string(),
  reason: z.string(),
  quote: z.object({ cents: z.number() }).optional(),
  answer: z.string().optional(),
  receipt: z.string().optional(),
  refunded: z.boolean().optional(),
  why: z.string().optional(),
});

// The same refund as a graph: a node per step, the branches as routers.
export const refundFlow = new Flow("refund-flow", { state: Refund })
  .node("quote", new Call("fetch_quote", { args: (s) => ({ orderId: s.orderId }), into: "quote" }))
  .node("approve", async (_s, ctx) => {
    const answer = await ctx.waitForEvent("manager-approval", { timeoutMs: DAY });
    return { answer: answer.status === "timeout" ? "timeout" : String(answer.payload) };
  })
  .node(
    "refund",
    new Call("issue_refund", {
      args: (s) => ({ orderId: s.orderId, cents: s.quote?.cents ?? 0, reason: s.reason }),
      into: "receipt",
    }),
  )
  .node("notify", async (s, ctx) => {
    await ctx.call("email_customer", { orderId: s.orderId, receipt: s.receipt ?? "" });
    return { refunded: true };
  })
  .node("decline", (s) => ({
    refunded: false,
    why: s.answer === "timeout" ? "no manager answered within a day" : "a manager declined",
  }))
  .edge("quote", (s) => ((s.quote?.cents ?? 0) > 50_000 ? "approve" : "refund"), { targets: ["approve", "refund"] })
  .edge("approve", (s) => (s.answer === "approve" ? "refund" : "decline"), { targets: ["refund", "decline"] })
  .edge("refund", "notify")
  .end("notify", "decline");
