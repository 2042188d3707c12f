import { Executor, ToolRegistry, type CheckpointRow, type CheckpointStore, type DurableEvent, type StoredCall, type StoredCheckpoint } from "@durable/core";
import { MemoryCheckpointStore } from "../../store-memory/src/index.js";
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

export function forever(): Promise<never> {
  return new Promise(() => {});
}

/** Where a simulated worker death happens around a store operation. */
export type CrashPoint =
  | { op: "recordCall"; kind: string; tool: string; when: "before" | "after" }
  | { op: "save"; step: number; when: "before" | "after" };

/**
 * A store through which a worker dies: at the crash point it stops, writing
 * nothing more (every later operation of this worker hangs). The store under
 * it is what the next worker opens.
 */
export class DyingStore implements CheckpointStore {
  dead = false;
  constructor(
    readonly inner: CheckpointStore,
    readonly crash: CrashPoint | undefined,
  ) {}

  async save(runId: string, step: number, row: CheckpointRow): Promise<void> {
    const hit = this.crash?.op === "save" && this.crash.step === step;
    await this.#gate(hit, () => this.inner.save(runId, step, row));
  }
  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const body = JSON.parse(sealed.slice(sealed.indexOf(".", 3) + 1)) as { kind: string; tool: string };
    const hit = this.crash?.op === "recordCall" && this.crash.kind === body.kind && this.crash.tool === body.tool;
    await this.#gate(hit, () => this.inner.recordCall(runId, segment, seq, sealed));
  }
  async latest(runId: string): Promise<StoredCheckpoint> {
    if (this.dead) await forever();
    return this.inner.latest(runId);
  }
  listUnfinished(flow: string): AsyncIterable<string> {
    return this.inner.listUnfinished(flow);
  }
  async delete(runId: string): Promise<void> {
    return this.inner.delete(runId);
  }
  async calls(runId: string): Promise<StoredCall[]> {
    if (this.dead) await forever();
    return this.inner.calls(runId);
  }
  async close(): Promise<void> {}

  async #gate(hit: boolean, write: () => Promise<void>): Promise<void> {
    if (this.dead) await forever();
    if (hit && this.crash?.when === "before") {
      this.dead = true;
      await forever();
    }
    await write();
    if (hit) {
      this.dead = true;
      await forever();
    }
  }
}

/** Lets pending promises and timers run, so a dying worker reaches its crash point. */
export async function settle(ms = 20): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

export function runnerOn(store: CheckpointStore, registry: ToolRegistry, events?: DurableEvent[]) {
  return new FlowRunner(new Executor(registry), {
    checkpoints: store,
    checkpointKey: KEY,
    ...(events === undefined ? {} : { events: (e: DurableEvent) => void events.push(e) }),
  });
}

export { MemoryCheckpointStore };
