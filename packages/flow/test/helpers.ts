import { Executor, MemoryCheckpointStore, ToolRegistry, type CheckpointStore, type DurableEvent } from "@durable/core";
import { forever } from "@durable/test-utils/stores";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";

export const KEY = "flow-tests-key-0123456789abcdef-xyz";

export const Order = z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") });
export type Order = z.infer<typeof Order>;
const args = (o: Order) => ({ show: o.show, seats: o.seats });

/** The seed's tickets flow. */
export function ticketsFlow() {
  return new Flow("tickets", { state: Order })
    .node("hold", new Call("hold_seats", { args, into: "note" }))
    .node("pay", new Call("charge_card", { args, into: "note" }))
    .node("send", new Call("email_tickets", { args: (o) => ({ show: o.show }), into: "note" }))
    .edge("hold", "pay")
    .edge("pay", "send")
    .end("send");
}

/** Counts how often each tool started; a tool may be made to hang forever, as in a worker that died inside it. */
export class Tools {
  readonly ran = new Map<string, number>();
  hangInside: string | undefined;

  count(tool: string): number {
    return this.ran.get(tool) ?? 0;
  }

  tool<A, R>(name: string, fn: (args: A) => R) {
    return async (a: A): Promise<R> => {
      this.ran.set(name, this.count(name) + 1);
      if (this.hangInside === name) await forever();
      return fn(a);
    };
  }

  registry(): ToolRegistry {
    return new ToolRegistry()
      .tool("hold_seats", this.tool("hold_seats", (a: { seats: number }) => `held ${a.seats}`), { idempotent: true })
      .tool("charge_card", this.tool("charge_card", (a: { seats: number }) => `charged ${a.seats * 40}`))
      .tool("email_tickets", this.tool("email_tickets", (a: { show: string }) => `mailed ${a.show}`));
  }
}

export function runnerOn(store: CheckpointStore, registry: ToolRegistry, events?: DurableEvent[]) {
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(events === undefined ? {} : { events: (e: DurableEvent) => void events.push(e) }),
  });
}

export { MemoryCheckpointStore };
export { DyingStore, forever, settle, type CrashPoint } from "@durable/test-utils/stores";
