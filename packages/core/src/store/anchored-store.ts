import type { AnchoredHead, RunAnchor } from "./anchor.js";
import type * as Store from "./contract.js";
import { CheckpointNotFound, CheckpointStoreCorrupt } from "../base/errors.js";

/**
 * A store checked against an anchor: each write, once the store acknowledged
 * it, raises the run's head in the anchor (so the anchor never runs ahead of
 * the store, and a crash between the two only leaves it behind); each read
 * of a run's latest checkpoint or call log reads the anchor first, then the
 * store, and a store that holds less than the anchor knows is
 * `CheckpointStoreCorrupt`. Reading the anchor first matters: whatever it
 * says was stored before the store is read, even while a worker writes.
 */
export class AnchoredStore implements Store.CheckpointStore {
  readonly inner: Store.CheckpointStore;
  readonly anchor: RunAnchor;
  readonly inProcessOnly?: boolean;
  readonly commit?: (runId: string, writes: readonly Store.RunWrite[]) => Promise<void>;
  /** The inner store's history: a chain read from it ends at a latest row the anchor checked. */
  readonly history?: (runId: string, from?: number) => Promise<Store.StoredCheckpoint[]>;
  /** The inner store's listing: what it lists is opened through the anchor. */
  readonly listRuns?: (query?: Store.RunQuery) => Promise<Store.RunPage>;
  /** The inner store's inbox, as it is: events are sealed one by one, outside the run's head the anchor keeps. */
  readonly sendEvent?: Store.CheckpointStore["sendEvent"];
  readonly inbox?: Store.CheckpointStore["inbox"];
  /** The inner store's queue listing, as it is: a queue's limits are the inner store's to keep. */
  readonly listQueued?: Store.CheckpointStore["listQueued"];
  /** The inner store's streams, as they are: each batch is sealed for its place, and the checkpoints count them. */
  readonly appendStream?: Store.CheckpointStore["appendStream"];
  readonly stream?: Store.CheckpointStore["stream"];
  readonly dropStream?: Store.CheckpointStore["dropStream"];

  constructor(inner: Store.CheckpointStore, anchor: RunAnchor) {
    this.inner = inner;
    this.anchor = anchor;
    if (inner.inProcessOnly !== undefined) this.inProcessOnly = inner.inProcessOnly;
    const history = inner.history?.bind(inner);
    if (history !== undefined) this.history = history;
    const listRuns = inner.listRuns?.bind(inner);
    if (listRuns !== undefined) this.listRuns = listRuns;
    const sendEvent = inner.sendEvent?.bind(inner);
    if (sendEvent !== undefined) this.sendEvent = sendEvent;
    const inbox = inner.inbox?.bind(inner);
    if (inbox !== undefined) this.inbox = inbox;
    const listQueued = inner.listQueued?.bind(inner);
    if (listQueued !== undefined) this.listQueued = listQueued;
    const appendStream = inner.appendStream?.bind(inner);
    if (appendStream !== undefined) this.appendStream = appendStream;
    const stream = inner.stream?.bind(inner);
    if (stream !== undefined) this.stream = stream;
    const dropStream = inner.dropStream?.bind(inner);
    if (dropStream !== undefined) this.dropStream = dropStream;
    const commit = inner.commit?.bind(inner);
    if (commit !== undefined)
      this.commit = async (runId, writes) => {
        await commit(runId, writes);
        await anchor.advance(runId, headOf(writes));
      };
  }

  async save(runId: string, step: number, row: Store.CheckpointRow, lease?: Store.LeaseClaim): Promise<void> {
    await this.inner.save(runId, step, row, lease);
    await this.anchor.advance(runId, headOf([{ kind: "save", step, row }]));
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    await this.inner.recordCall(runId, segment, seq, sealed);
    await this.anchor.advance(runId, headOf([{ kind: "record", segment, seq, sealed }]));
  }

  async latest(runId: string): Promise<Store.StoredCheckpoint> {
    const head = await this.anchor.read(runId);
    let row: Store.StoredCheckpoint;
    try {
      row = await this.inner.latest(runId);
    } catch (error) {
      if (error instanceof CheckpointNotFound && head !== undefined)
        throw new CheckpointStoreCorrupt(
          runId,
          `the anchor knows step ${head.step} of the run, and the store holds none of it: the run was deleted behind the runner's back.`,
        );
      throw error;
    }
    if (head !== undefined && (row.step < head.step || row.segment < head.segment))
      throw new CheckpointStoreCorrupt(
        runId,
        `the store's latest checkpoint is step ${row.step} (segment ${row.segment}), and the anchor knows step ${head.step} (segment ${head.segment}): newer checkpoints were deleted or rolled back.`,
      );
    return row;
  }

  async calls(runId: string, from?: Store.CallPosition): Promise<Store.StoredCall[]> {
    const head = await this.anchor.read(runId);
    const rows = await this.inner.calls(runId, from);
    if (head === undefined) return rows;
    // Records are numbered from 0 in each segment with no gap (the call log checks it): the highest tells the count.
    const found: number[] = [];
    if (from !== undefined) found[from.segment] = from.seq;
    for (const row of rows) found[row.segment] = Math.max(found[row.segment] ?? 0, row.seq + 1);
    head.calls.forEach((count, segment) => {
      if (segment >= (from?.segment ?? 0) && (found[segment] ?? 0) < count)
        throw new CheckpointStoreCorrupt(
          runId,
          `the anchor knows ${count} call records in segment ${segment}, and the store holds ${found[segment] ?? 0}: records were deleted or rolled back.`,
        );
    });
    return rows;
  }

  async delete(runId: string): Promise<void> {
    await this.inner.delete(runId);
    await this.anchor.forget(runId);
  }

  listUnfinished(name: string, options?: Store.ListOptions): AsyncIterable<string> {
    return this.inner.listUnfinished(name, options);
  }

  renew(runId: string, segment: number, terms: Store.LeaseTerms): Promise<Store.Lease> {
    return this.inner.renew(runId, segment, terms);
  }

  release(runId: string, segment: number, owner: string): Promise<void> {
    return this.inner.release(runId, segment, owner);
  }

  leaseOf(runId: string): Promise<Store.LeaseView | undefined> {
    return this.inner.leaseOf(runId);
  }

  /** Closes the store; the anchor is the application's, closed by it. */
  close(): Promise<void> {
    return this.inner.close();
  }
}

const wrapped = new WeakMap<Store.CheckpointStore, WeakMap<RunAnchor, AnchoredStore>>();

/**
 * The store a runner writes through: `store` itself without an anchor, else
 * the one `AnchoredStore` of that store and anchor (the same object for every
 * runner, so a process still sees each run it drives once).
 */
export function anchoredStore(store: Store.CheckpointStore, anchor: RunAnchor | undefined): Store.CheckpointStore {
  if (anchor === undefined) return store;
  let byAnchor = wrapped.get(store);
  if (byAnchor === undefined) {
    byAnchor = new WeakMap();
    wrapped.set(store, byAnchor);
  }
  let anchored = byAnchor.get(anchor);
  if (anchored === undefined) {
    anchored = new AnchoredStore(store, anchor);
    byAnchor.set(anchor, anchored);
  }
  return anchored;
}

/** What a batch of writes tells of the run's head: its checkpoint's step and segment, each segment's records. */
function headOf(writes: readonly Store.RunWrite[]): AnchoredHead {
  let step = 0;
  let segment = 0;
  const calls: number[] = [];
  for (const write of writes) {
    const at = write.kind === "save" ? write.row.segment : write.segment;
    segment = Math.max(segment, at);
    if (write.kind === "save") step = Math.max(step, write.step);
    else calls[at] = Math.max(calls[at] ?? 0, write.seq + 1);
  }
  return { step, segment, calls: Array.from({ length: segment + 1 }, (_, s) => calls[s] ?? 0) };
}
