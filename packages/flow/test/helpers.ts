import {
  type CheckpointStore,
  type DurableEvent,
  Executor,
  MemoryCheckpointStore,
  type ToolRegistry,
} from "@durable/core";
import { z } from "zod";
import { Call, Flow, FlowRunner } from "../src/index.js";

export const KEY = "flow-tests-key-0123456789abcdef-xyz";

const Order = z.object({ show: z.string(), seats: z.number().int(), note: z.string().default("") });
type Order = z.infer<typeof Order>;
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

export function runnerOn(store: CheckpointStore, registry: ToolRegistry, events?: DurableEvent[]) {
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(events === undefined ? {} : { events: (e: DurableEvent) => void events.push(e) }),
  });
}

export { MemoryCheckpointStore };
export { DyingStore, forever, settle, storeWith, type CrashPoint } from "@durable/test-utils/stores";
export { Tools } from "@durable/test-utils/tools";
