import { z } from "zod";
import { workflow } from "../src/index.js";

const DAY = 24 * 60 * 60 * 1000;
const Refund = z.object({ orderId: z.string(), reason: z.string() });

// A refund over $500 waits for a manager's answer, at most a day.
export const refund = workflow("refund", { input: Refund }, async (ctx, { orderId, reason }) => {
  const quote = await ctx.call<{ cents: number }>("fetch_quote", { orderId });
  if (quote.cents > 50_000) {
    const answer = await ctx.waitForEvent("manager-approval", { timeoutMs: DAY });
    if (answer.status === "timeout") return { refunded: false, why: "no manager answered within a day" };
    if (answer.payload !== "approve") return { refunded: false, why: "a manager declined" };
  }
  const receipt = await ctx.call<string>("issue_refund", { orderId, cents: quote.cents, reason });
  await ctx.call("email_customer", { orderId, receipt });
  return { refunded: true, receipt };
});
