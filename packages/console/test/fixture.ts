import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import {
  type CheckpointKeys,
  type CheckpointStore,
  Executor,
  jsonlEventSink,
  RecoveryNeedsDecision,
  type RunWorker,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { ticketsFlow } from "@durable-apps/shared/tickets";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { type LoopModel, type Message, runToolLoop } from "@durable/loop";
import { z } from "zod";

/** The key the fixture's workers seal with. */
export const KEY = "console-test-key-0123456789abcdef0123456789";

/** Runs whose charge fails while listed here (a retry after removing one succeeds). */
export const failingCharges = new Set<string>();
/** Runs whose email hangs past its timeout while listed here: the call is left in doubt. */
export const hangingEmails = new Set<string>();

/** The tickets flow the apps run (hold, pay, send), under the name orders. */
export const orders = ticketsFlow("orders");

/** One node whose call needs an approval. */
export const refunds = new Flow("refunds", {
  state: z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") }),
})
  .node("refund", new Call("refund", { args: (o) => ({ show: o.show, seats: o.seats }), into: "note" }))
  .end("refund");

/** One node whose call fails every attempt and waits ten minutes before the next: the run waits for its retry time. */
export const reminders = new Flow("reminders", {
  state: z.object({ to: z.string(), note: z.string().default("") }),
})
  .node("remind", new Call("remind", { args: (s) => ({ to: s.to }), into: "note" }))
  .end("remind");

/** One node that sleeps an hour before it says so: the run waits for its wake time. */
export const naps = new Flow("naps", { state: z.object({ note: z.string().default("") }) })
  .node("nap", async (_state, ctx) => {
    await ctx.sleep(3_600_000);
    return { note: "rested" };
  })
  .end("nap");

/** One node that waits for the event `paid` (an hour, or with no timeout for `timeoutMs: null`) and keeps its payload. */
export const payments = new Flow("payments", {
  state: z.object({ timeoutMs: z.number().int().nullable().default(3_600_000), paid: z.string().default("") }),
})
  .node("pay", async (state, ctx) => {
    const paid = await ctx.waitForEvent("paid", state.timeoutMs === null ? {} : { timeoutMs: state.timeoutMs });
    return { paid: paid.status === "received" ? JSON.stringify(paid.payload) : "timeout" };
  })
  .end("pay");

/**
 * The tools: hold (idempotent), charge (fails for `failingCharges`), email (a 100 ms timeout), refund (needs an
 * approval), remind (fails, its next attempt ten minutes later).
 */
export function registry(): ToolRegistry {
  return new ToolRegistry()
    .tool("hold_seats", (a: { show: string; seats: number }) => `held ${a.seats} for ${a.show}`, { idempotent: true })
    .tool("charge_card", (a: { seats: number }, ctx) => {
      if (failingCharges.has(ctx.runId)) throw new Error("card declined");
      return `charged $${a.seats * 40}`;
    })
    .tool(
      "email_tickets",
      async (a: { show: string }, ctx) => {
        if (hangingEmails.has(ctx.runId)) await new Promise((resolve) => setTimeout(resolve, 1_000));
        return `mailed ${a.show}`;
      },
      { timeoutMs: 100 },
    )
    .tool("refund", (a: { seats: number }) => `refunded $${a.seats * 40}`, { approval: true })
    .tool(
      "remind",
      () => {
        throw new Error("mail server busy");
      },
      { retry: { attempts: 3, initialDelayMs: 600_000, jitter: 0 } },
    );
}

/** How the fixture's workers seal: the key (HMAC or an Ed25519 private key) and an encryption key, if any. */
export interface Sealing {
  readonly checkpointKey: CheckpointKeys;
  readonly encryptionKey?: string;
}

/** A runner of the fixture's flows on `store`, its events appended to `events`. */
export function runner(store: CheckpointStore, events: string, sealing: Sealing = { checkpointKey: KEY }): FlowRunner {
  return new FlowRunner(new Executor(registry()), {
    checkpoints: store,
    ...sealing,
    events: jsonlEventSink(events),
    lease: { ms: 2_000 },
  });
}

/** A worker serving both flows on `store`, polling often (the tests wait for it to act). */
export function worker(store: CheckpointStore, events: string, sealing?: Sealing): RunWorker {
  const r = runner(store, events, sealing);
  return startWorker({
    serve: [r.served(orders), r.served(refunds), r.served(reminders), r.served(payments)],
    pollMs: 50,
    maxPollMs: 200,
    stopOnSignals: false,
  });
}

/** The runs `seed` made, by what each shows. */
export interface Seeded {
  readonly done: string;
  readonly paused: string;
  readonly failed: string;
  readonly inDoubt: string;
  readonly loop: string;
  /** A run whose id holds markup: the page must show it as text. */
  readonly hostile: string;
}

const scripted: LoopModel = {
  async reply(messages: readonly Message[]) {
    const last = messages.at(-1);
    if (last?.role === "tool") return { text: `The seats are ${last.content}.`, toolCalls: [] };
    return { text: "", toolCalls: [{ id: "call-1", name: "hold_seats", args: { show: "Hamlet", seats: 2 } }] };
  },
};

/** Fills `store` with one run of each kind a console shows, with ids of `tag` so tests sharing a store tell theirs apart. */
export async function seed(
  store: CheckpointStore,
  events: string,
  tag = randomBytes(4).toString("hex"),
): Promise<Seeded> {
  const r = runner(store, events);
  const ids: Seeded = {
    done: `${tag}-done`,
    paused: `${tag}-paused`,
    failed: `${tag}-failed`,
    inDoubt: `${tag}-doubt`,
    loop: `${tag}-loop`,
    hostile: `${tag}-<script>alert(1)</script>"'&`,
  };
  const order = { show: "Hamlet", seats: 2 };
  await r.run(orders, order, { runId: ids.done });
  await r.run(orders, { show: "<b>Lear</b>", seats: 1 }, { runId: ids.hostile });
  await r.run(refunds, order, { runId: ids.paused });
  failingCharges.add(ids.failed);
  await r.run(orders, order, { runId: ids.failed }).catch(() => undefined);
  hangingEmails.add(ids.inDoubt);
  await r.run(orders, order, { runId: ids.inDoubt }).catch(() => undefined);
  hangingEmails.delete(ids.inDoubt);
  // A recovery finds the email in doubt and stops for a decision, leaving the run waiting for one.
  await r.recover(orders, ids.inDoubt).then(
    () => {
      throw new Error("the in-doubt run recovered without a decision");
    },
    (error: unknown) => {
      if (!(error instanceof RecoveryNeedsDecision)) throw error;
    },
  );
  await runToolLoop(scripted, registry(), [{ role: "user", content: "Hold two seats for Hamlet." }], {
    runId: ids.loop,
    name: "seat-chat",
    checkpoints: store,
    checkpointKey: KEY,
    events: jsonlEventSink(events),
  });
  return ids;
}

/** Closes what a test file opened (consoles, then its store), in order, and removes its folder. */
export async function closeAll(
  dir: string,
  ...opened: ReadonlyArray<{ close(): Promise<void> } | undefined>
): Promise<void> {
  for (const each of opened) await each?.close();
  rmSync(dir, { recursive: true, force: true });
}
