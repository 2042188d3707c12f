import { Executor, ToolRegistry } from "@durable/core";
import { type CheckpointRow, type CheckpointStore, StoreUnavailable } from "@durable/core/store";
import { Flow, FlowRunner } from "@durable/flow";
import { ticketsFlow } from "@durable-apps/shared/tickets";
import { z } from "zod";

export const KEY = "bench-key-0123456789abcdef-0123456789";

/** The seed's tickets flow: three supersteps of one call each. */
export const tickets = ticketsFlow();

export const ORDER = { show: "Hamlet", seats: 2 };

/** Tools that do nothing: what is measured is what durability adds. */
const tools: ToolRegistry = new ToolRegistry()
  .tool("hold_seats", (a: { seats: number }) => `held ${a.seats}`, { idempotent: true })
  .tool("charge_card", (a: { seats: number }) => `charged ${a.seats * 40}`)
  .tool("email_tickets", (a: { show: string }) => `mailed ${a.show}`)
  .tool("work", (a: { i: number }) => a.i);

/** The tickets run without any store: the same tools called one after another. */
export async function plainTickets(): Promise<void> {
  await tools.get("hold_seats").fn(ORDER, undefined as never);
  await tools.get("charge_card").fn(ORDER, undefined as never);
  await tools.get("email_tickets").fn({ show: ORDER.show }, undefined as never);
}

export function runner(store: CheckpointStore): FlowRunner {
  return new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
}

/** A flow of one superstep in which one node makes `calls` tool calls at once. */
export function fanFlow(calls: number): Flow<{ n: number }> {
  const state = z.object({ n: z.number() });
  return new Flow(`fan-${calls}`, { state })
    .node("fan", async (s, ctx) => {
      const results = await Promise.all(Array.from({ length: calls }, (_, i) => ctx.call("work", { i })));
      return { n: s.n + results.length };
    })
    .end("fan");
}

/** The writes a store is asked for, by kind and size. */
export interface WriteLog {
  readonly writes: Array<{ kind: "save" | "record" | "renew" | "release"; bytes: number }>;
}

/** The store with its writes passed through `save`, `recordCall`, `renew` and `release` where given. */
function intercepted(
  store: CheckpointStore,
  writes: Partial<Pick<CheckpointStore, "save" | "recordCall" | "renew" | "release">>,
): CheckpointStore {
  return {
    save: writes.save ?? ((id, step, row, lease) => store.save(id, step, row, lease)),
    latest: (id) => store.latest(id),
    listUnfinished: (flow, options) => store.listUnfinished(flow, options),
    delete: (id) => store.delete(id),
    recordCall: writes.recordCall ?? ((id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed)),
    calls: (id) => store.calls(id),
    renew: writes.renew ?? ((id, segment, terms) => store.renew(id, segment, terms)),
    release: writes.release ?? ((id, segment, owner) => store.release(id, segment, owner)),
    leaseOf: (id) => store.leaseOf(id),
    close: () => store.close(),
  };
}

/** The store, noting each write's size. */
export function noting(store: CheckpointStore, log: WriteLog): CheckpointStore {
  return intercepted(store, {
    save: (id, step, row: CheckpointRow, lease) => {
      log.writes.push({ kind: "save", bytes: row.sealed.length });
      return store.save(id, step, row, lease);
    },
    recordCall: (id, segment, seq, sealed) => {
      log.writes.push({ kind: "record", bytes: sealed.length });
      return store.recordCall(id, segment, seq, sealed);
    },
    renew: (id, segment, terms) => {
      log.writes.push({ kind: "renew", bytes: 0 });
      return store.renew(id, segment, terms);
    },
    release: (id, segment, owner) => {
      log.writes.push({ kind: "release", bytes: 0 });
      return store.release(id, segment, owner);
    },
  });
}

/** The store with every save's lease dropped: the same run as it was before leases, to measure what they cost. */
export function unleased(store: CheckpointStore): CheckpointStore {
  return intercepted(store, { save: (id, step, row) => store.save(id, step, row) });
}

/** The store as a worker sees it that loses its connection at the n-th save: the run is left for recovery. */
export function cutAtSave(store: CheckpointStore, n: number): CheckpointStore {
  let saves = 0;
  return intercepted(store, {
    save: (id, step, row, lease) =>
      ++saves >= n
        ? Promise.reject(new StoreUnavailable("cut off for the benchmark"))
        : store.save(id, step, row, lease),
  });
}
