import { Executor, ToolRegistry } from "@durable/core";
import { type CheckpointRow, type CheckpointStore, StoreUnavailable } from "@durable/core/store";
import { Flow, FlowRunner, type FlowRunnerOptions } from "@durable/flow";
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

type TicketCall = (order: typeof ORDER) => Promise<unknown>;

/** The tickets flow's three tool calls, in order, outside any runner: what no store and the peers' nodes and steps call. */
export const TICKET_CALLS: readonly [TicketCall, TicketCall, TicketCall] = [
  async (o) => tools.get("hold_seats").fn(o, undefined as never),
  async (o) => tools.get("charge_card").fn(o, undefined as never),
  async (o) => tools.get("email_tickets").fn({ show: o.show }, undefined as never),
];

/** The tickets run without any store: the same tools called one after another. */
export async function plainTickets(): Promise<void> {
  for (const call of TICKET_CALLS) await call(ORDER);
}

/** A runner of the tickets flow on `store`, signed with HMAC under `KEY` unless `storage` says otherwise. */
export function runner(store: CheckpointStore, storage: Omit<FlowRunnerOptions, "checkpoints"> = {}): FlowRunner {
  return new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY, ...storage });
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
  /** The store operations that wrote: a batch (`commit`) is one, whatever it holds. */
  commits: number;
}

/** The store with its writes passed through `save`, `recordCall`, `commit`, `renew` and `release` where given; it batches when the store does. */
function intercepted(
  store: CheckpointStore,
  writes: Partial<Pick<CheckpointStore, "save" | "recordCall" | "commit" | "renew" | "release">>,
): CheckpointStore {
  const commit = store.commit?.bind(store);
  const history = store.history?.bind(store);
  return {
    ...(commit === undefined ? {} : { commit: writes.commit ?? commit }),
    // Forwarded, so a run through it is saved as changes and read back by ranges, as on the store itself.
    ...(history === undefined ? {} : { history }),
    save: writes.save ?? ((id, step, row, lease) => store.save(id, step, row, lease)),
    latest: (id) => store.latest(id),
    listUnfinished: (flow, options) => store.listUnfinished(flow, options),
    delete: (id) => store.delete(id),
    recordCall: writes.recordCall ?? ((id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed)),
    calls: (id, from) => store.calls(id, from),
    renew: writes.renew ?? ((id, segment, terms) => store.renew(id, segment, terms)),
    release: writes.release ?? ((id, segment, owner) => store.release(id, segment, owner)),
    leaseOf: (id) => store.leaseOf(id),
    close: () => store.close(),
  };
}

/** The store, noting each write's size. */
export function noting(store: CheckpointStore, log: WriteLog): CheckpointStore {
  const note = (kind: WriteLog["writes"][number]["kind"], bytes: number) => void log.writes.push({ kind, bytes });
  return intercepted(store, {
    save: (id, step, row: CheckpointRow, lease) => {
      note("save", row.sealed.length);
      log.commits += 1;
      return store.save(id, step, row, lease);
    },
    recordCall: (id, segment, seq, sealed) => {
      note("record", sealed.length);
      log.commits += 1;
      return store.recordCall(id, segment, seq, sealed);
    },
    commit: (id, writes) => {
      for (const w of writes) note(w.kind, w.kind === "record" ? w.sealed.length : w.row.sealed.length);
      log.commits += 1;
      return store.commit?.(id, writes) ?? Promise.reject(new Error("the store does not batch"));
    },
    renew: (id, segment, terms) => {
      note("renew", 0);
      log.commits += 1;
      return store.renew(id, segment, terms);
    },
    release: (id, segment, owner) => {
      note("release", 0);
      log.commits += 1;
      return store.release(id, segment, owner);
    },
  });
}

/** The store with every save's lease dropped: the same run as it was before leases, to measure what they cost. */
export function unleased(store: CheckpointStore): CheckpointStore {
  return intercepted(store, { save: (id, step, row) => store.save(id, step, row) });
}

/**
 * The store as a worker sees it that loses its connection at the n-th save:
 * what it wrote before that save lands (a batch holding it, up to it), and the
 * run is left for recovery.
 */
export function cutAtSave(store: CheckpointStore, n: number): CheckpointStore {
  let saves = 0;
  const cut = () => Promise.reject(new StoreUnavailable("cut off for the benchmark"));
  return intercepted(store, {
    save: (id, step, row, lease) => (++saves >= n ? cut() : store.save(id, step, row, lease)),
    commit: async (id, writes) => {
      const at = writes.findIndex((w) => w.kind === "save");
      if (at === -1 || ++saves < n) return store.commit?.(id, writes);
      if (at > 0) await store.commit?.(id, writes.slice(0, at));
      return cut();
    },
  });
}
