import type { MemoryData, MemoryRun } from "@durable/core/internal";
import { MemoryCheckpointStore } from "@durable/core";
import {
  type CheckpointRow,
  type CheckpointStore,
  checkBatch,
  checkLeaseTerms,
  claimRefusal,
  isClaimable,
  isEnded,
  type LeaseClaim,
  type LeaseHeld,
  type ListOptions,
  leaseAfterSave,
  recordRefusal,
  type RunPage,
  type RunQuery,
  type RunWrite,
  runCursor,
  saveRefusal,
  type StoredCall,
  type StoredCheckpoint,
} from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import memory, { raw } from "./memory.js";

/**
 * Stores that each break one promise of the protocol, as a store author could
 * by mistake: forks of the memory store with ONE bug each. The kit's own tests
 * run its groups against them: a kit that passes a broken store is worth nothing.
 */

/**
 * The memory store with its rows in reach, for a fork to write them its own (wrong) way.
 * A fork that writes keeps leases by the memory store's rules (`leaseRefusal`, `append`,
 * `listable`), so that its one bug is the only one.
 */
export class ForkedMemoryStore extends MemoryCheckpointStore {
  protected readonly data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.data = data;
  }
  protected entry(runId: string): MemoryRun {
    const entry = this.data.get(runId) ?? { checkpoints: [], calls: [], counts: new Map(), lease: undefined };
    this.data.set(runId, entry);
    return entry;
  }
  protected head(runId: string): StoredCheckpoint | undefined {
    return this.data.get(runId)?.checkpoints.at(-1);
  }
  /** The clock leases are measured by: this process's monotonic clock, which ignores `Date.now`, as the memory store's. */
  protected clock(): number {
    return Math.floor(performance.timeOrigin + performance.now());
  }
  /** Why saving `row` with `lease` is refused by the lease rule (a claim of another owner's live lease); malformed terms throw. */
  protected leaseRefusal(runId: string, row: CheckpointRow, lease: LeaseClaim | undefined): LeaseHeld | undefined {
    checkLeaseTerms(lease);
    const entry = this.data.get(runId);
    return claimRefusal(runId, row, entry?.checkpoints.at(-1), entry?.lease, lease, this.clock());
  }
  /** Appends the row and leaves the lease the save asks for. */
  protected append(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): void {
    const { status, segment, name: flow, kind, sealed } = row;
    const entry = this.entry(runId);
    entry.checkpoints.push({ runId, step, status, segment, name: flow, kind, sealed });
    entry.lease = leaseAfterSave(row, lease, this.clock(), entry.lease);
    entry.waitsForDecision = row.waitsForDecision === true;
  }
  /** Whether a listing with `options` gives a run of this flow that is unfinished. */
  protected listable(entry: MemoryRun, options: ListOptions): boolean {
    const head = entry.checkpoints.at(-1);
    return (
      options.claimable !== true ||
      (head !== undefined && isClaimable(head.status, entry.lease, this.clock(), entry.waitsForDecision))
    );
  }
  protected appendCall(runId: string, segment: number, seq: number, sealed: string): void {
    const entry = this.entry(runId);
    entry.calls.push({ runId, segment, seq, sealed });
    entry.counts.set(segment, (entry.counts.get(segment) ?? 0) + 1);
  }
}

/** Saves when the rules pass for `row` as `relax` rewrites it: the one rule it drops is the bug. */
class RelaxedSave extends ForkedMemoryStore {
  constructor(readonly relax: (row: CheckpointRow, head: StoredCheckpoint | undefined) => CheckpointRow) {
    super();
  }
  override async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    const head = this.head(runId);
    const refused = saveRefusal(runId, step, this.relax(row, head), head) ?? this.leaseRefusal(runId, row, lease);
    if (refused !== undefined) throw refused;
    this.append(runId, step, row, lease);
  }
}

/** Accepts every save: a lost compare-and-set, so two workers both "win" a step. */
class SavesAnyStep extends ForkedMemoryStore {
  override async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    this.append(runId, step, row, lease);
  }
}

/** Checks, then writes after an await (a read and a write in two round trips): concurrent saves all pass the check. */
class CheckThenWriteSave extends ForkedMemoryStore {
  override async save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    const refused = saveRefusal(runId, step, row, this.head(runId)) ?? this.leaseRefusal(runId, row, lease);
    if (refused !== undefined) throw refused;
    await new Promise((resolve) => setImmediate(resolve));
    this.append(runId, step, row, lease);
  }
}

/** Records when the rules pass for what `relax` rewrites: the one rule it drops is the bug. */
class RelaxedRecord extends ForkedMemoryStore {
  constructor(
    readonly relax: (
      call: { segment: number; seq: number; next: number },
      head: StoredCheckpoint | undefined,
    ) => {
      segment: number;
      seq: number;
      head: StoredCheckpoint | undefined;
    },
  ) {
    super();
  }
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const head = this.head(runId);
    const next = this.data.get(runId)?.counts.get(segment) ?? 0;
    const relaxed = this.relax({ segment, seq, next }, head);
    const refused = recordRefusal(runId, relaxed.segment, relaxed.seq, relaxed.head, next);
    if (refused !== undefined) throw refused;
    this.appendCall(runId, segment, seq, sealed);
  }
}

/** Takes a record resent identical by appending it again, as a retried INSERT without a unique key would. */
class StoresResendTwice extends ForkedMemoryStore {
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const entry = this.data.get(runId);
    if (entry?.calls.some((c) => c.segment === segment && c.seq === seq && c.sealed === sealed) === true) {
      entry.calls.push({ runId, segment, seq, sealed });
      return;
    }
    return super.recordCall(runId, segment, seq, sealed);
  }
}

/** Lists the runs whose latest row passes `unfinished` instead of running-or-paused. */
class MisfilteredList extends ForkedMemoryStore {
  constructor(readonly unfinished: (head: StoredCheckpoint) => boolean) {
    super();
  }
  override async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    for (const [runId, entry] of [...this.data]) {
      const head = entry.checkpoints.at(-1);
      if (head !== undefined && head.name === flow && this.unfinished(head) && this.listable(entry, options))
        yield runId;
    }
  }
}

/** Reads every unfinished run's row into memory before it gives the first id, as `SELECT *` into an array would. */
class LoadsEveryRun extends ForkedMemoryStore {
  override async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    const rows = [...this.data.values()]
      .filter((entry) => this.listable(entry, options))
      .flatMap((entry) => entry.checkpoints.slice(-1))
      .filter((h) => h.name === flow && !isEnded(h.status));
    const loaded: StoredCheckpoint[] = structuredClone(rows);
    for (const row of loaded) yield row.runId;
  }
}

/** Lists claimable runs by status and lease alone, as an index made before runs waited for a decision would. */
class ListsRunsWaitingForDecision extends ForkedMemoryStore {
  override async *listUnfinished(flow: string, options: ListOptions = {}): AsyncIterable<string> {
    for (const [runId, entry] of [...this.data]) {
      const head = entry.checkpoints.at(-1);
      if (head === undefined || head.name !== flow || isEnded(head.status)) continue;
      if (options.claimable !== true || isClaimable(head.status, entry.lease, this.clock())) yield runId;
    }
  }
}

/** Gives its rows as they are stored, unchecked: a row of another shape reaches core, or a TypeError is thrown. */
class TrustsItsRows extends ForkedMemoryStore {
  override async latest(runId: string): Promise<StoredCheckpoint> {
    return this.head(runId) ?? super.latest(runId);
  }
  override async history(runId: string): Promise<StoredCheckpoint[]> {
    return [...(this.data.get(runId)?.checkpoints ?? [])];
  }
  override async calls(runId: string): Promise<StoredCall[]> {
    return [...(this.data.get(runId)?.calls ?? [])];
  }
}

/** Deletes every run whose id starts with the one given, as `LIKE 'id%'` or a key pattern `id*` would. */
class DeletesByPrefix extends ForkedMemoryStore {
  override async delete(runId: string): Promise<void> {
    for (const id of [...this.data.keys()]) if (id.startsWith(runId)) this.data.delete(id);
  }
}

/** Deletes the checkpoints and forgets the call-log table. */
class DeleteKeepsRecords extends ForkedMemoryStore {
  override async delete(runId: string): Promise<void> {
    const entry = this.data.get(runId);
    if (entry === undefined) return;
    this.data.set(runId, { checkpoints: [], calls: entry.calls, counts: new Map(), lease: undefined });
  }
}

/** `latest` picks the row that `pick` gives of every row of the run. */
class MispickedLatest extends ForkedMemoryStore {
  constructor(readonly pick: (rows: readonly StoredCheckpoint[]) => StoredCheckpoint | undefined) {
    super();
  }
  override async latest(runId: string): Promise<StoredCheckpoint> {
    const picked = this.pick(this.data.get(runId)?.checkpoints ?? []);
    return picked ?? super.latest(runId);
  }
}

/** `listRuns` gives its page in another order, or pages by a cursor that repeats runs: the kit's inspect group must catch each. */
class MislistedRuns extends ForkedMemoryStore {
  constructor(readonly bug: "oldest first" | "cursor repeats") {
    super();
  }
  override async listRuns(query?: RunQuery): Promise<RunPage> {
    const page = await super.listRuns(query);
    if (this.bug === "oldest first") return { ...page, runs: [...page.runs].reverse() };
    // The cursor of the page's first run: the next page starts again inside this one.
    const first = page.runs[0];
    return page.next === undefined || first === undefined ? page : { ...page, next: runCursor(first) };
  }
}

/** `calls` sorts the records by `order` instead of segment then seq. */
class MisorderedCalls extends ForkedMemoryStore {
  constructor(readonly order: (a: StoredCall, b: StoredCall) => number) {
    super();
  }
  override async calls(runId: string): Promise<StoredCall[]> {
    return (await super.calls(runId)).sort(this.order);
  }
}

/** Loses the newest call record on every read. */
class DropsLastRecord extends MemoryCheckpointStore {
  override async calls(runId: string): Promise<StoredCall[]> {
    return (await super.calls(runId)).slice(0, -1);
  }
}

/** Reads history from one step past the one asked: a chain read from its snapshot misses the snapshot. */
class HistoryFromNext extends ForkedMemoryStore {
  override async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    return super.history(runId, from + 1);
  }
}

/** Commits a batch one write at a time through `save` and `recordCall`: the writes before a refused one stay. */
class BatchOneByOne extends ForkedMemoryStore {
  override async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    checkBatch(writes);
    for (const write of writes) {
      if (write.kind === "record") await this.recordCall(runId, write.segment, write.seq, write.sealed);
      else await this.save(runId, write.step, write.row, write.lease);
    }
  }
}

/** Checks a batch's records against the run's head before the batch, not as the batch's own checkpoint leaves it. */
class BatchCheckedAgainstHead extends ForkedMemoryStore {
  override async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    checkBatch(writes);
    const entry = this.data.get(runId);
    const head = entry?.checkpoints.at(-1);
    const added = new Map<number, number>();
    for (const write of writes) {
      if (write.kind !== "record") continue;
      const before = added.get(write.segment) ?? 0;
      const next = (entry?.counts.get(write.segment) ?? 0) + before;
      const refused = recordRefusal(runId, write.segment, write.seq, head, next);
      if (refused !== undefined) throw refused;
      added.set(write.segment, before + 1);
    }
    const saves = writes.filter((w) => w.kind === "save");
    if (saves.length > 0) await super.commit(runId, saves);
    for (const write of writes)
      if (write.kind === "record") this.appendCall(runId, write.segment, write.seq, write.sealed);
  }
}

const shared: MemoryData = new Map();
const byText = (key: (c: StoredCall) => string) => (a: StoredCall, b: StoredCall) =>
  key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
const stepsAsText = (rows: readonly StoredCheckpoint[]) =>
  [...rows].sort((a, b) => (String(a.step) < String(b.step) ? -1 : 1)).at(-1);

export function broken(name: string, create: () => MemoryCheckpointStore): ConformanceInitializer {
  return { name, createStore: create };
}

/** A broken fork with the memory store's raw oracle over its rows: for the cases that change them past its API. */
function brokenWithRows(name: string, create: (data: MemoryData) => ForkedMemoryStore): ConformanceInitializer {
  const dataOf = new WeakMap<CheckpointStore, MemoryData>();
  return {
    name,
    createStore() {
      const data: MemoryData = new Map();
      const store = create(data);
      dataOf.set(store, data);
      return store;
    },
    raw: (store) => raw(dataOf.get(store)!),
  };
}

const running = (head: StoredCheckpoint) => ({ ...head, status: "running" as const });

export const noCompareAndSet: ConformanceInitializer = broken("saves any step", () => new SavesAnyStep());
export const saveIgnoresFlowAndKind: ConformanceInitializer = broken(
  "saves over another flow's or kind's run",
  () => new RelaxedSave((row, head) => (head === undefined ? row : { ...row, name: head.name, kind: head.kind })),
);
export const saveTakesLowerSegment: ConformanceInitializer = broken(
  "saves from a lower segment",
  () =>
    new RelaxedSave((row, head) =>
      head === undefined ? row : { ...row, segment: Math.max(row.segment, head.segment) },
    ),
);
export const saveNotAtomic: ConformanceInitializer = broken(
  "checks then saves across an await",
  () => new CheckThenWriteSave(),
);
export const noSegmentCheck: ConformanceInitializer = broken(
  "records calls of any segment",
  () => new RelaxedRecord(({ segment, seq }, head) => ({ segment: head?.segment ?? segment, seq, head })),
);
export const recordTakesGap: ConformanceInitializer = broken(
  "records a call past a gap",
  () => new RelaxedRecord(({ segment, seq, next }, head) => ({ segment, seq: Math.min(seq, next), head })),
);
export const recordTakesDuplicate: ConformanceInitializer = broken(
  "records a duplicate call number",
  () => new RelaxedRecord(({ segment, seq, next }, head) => ({ segment, seq: Math.max(seq, next), head })),
);
export const storesResendTwice: ConformanceInitializer = broken(
  "stores a record resent identical twice",
  () => new StoresResendTwice(),
);
export const recordOnEndedRun: ConformanceInitializer = broken(
  "records calls on an ended run",
  () =>
    new RelaxedRecord(({ segment, seq }, head) => ({
      segment,
      seq,
      head: head !== undefined && isEnded(head.status) ? running(head) : head,
    })),
);
export const listIncludesFailed: ConformanceInitializer = broken(
  "lists failed runs as unfinished",
  () => new MisfilteredList((h) => h.status !== "done"),
);
export const listMissesPaused: ConformanceInitializer = broken(
  "lists only running runs",
  () => new MisfilteredList((h) => h.status === "running"),
);
export const listLoadsEverything: ConformanceInitializer = broken(
  "loads every unfinished run before the first id",
  () => new LoadsEveryRun(),
);
export const runsOldestFirst: ConformanceInitializer = broken(
  "lists runs oldest first",
  () => new MislistedRuns("oldest first"),
);
export const cursorRepeats: ConformanceInitializer = broken(
  "pages by a cursor that starts inside the page",
  () => new MislistedRuns("cursor repeats"),
);
export const listsRunsWaitingForDecision: ConformanceInitializer = broken(
  "lists runs waiting for a decision as claimable",
  () => new ListsRunsWaitingForDecision(),
);
export const trustsItsRows: ConformanceInitializer = brokenWithRows(
  "gives its rows unchecked",
  (data) => new TrustsItsRows(data),
);
export const deleteByPrefix: ConformanceInitializer = broken(
  "deletes every run whose id starts with the one given",
  () => new DeletesByPrefix(),
);
export const deleteKeepsRecords: ConformanceInitializer = broken(
  "deletes checkpoints but keeps call records",
  () => new DeleteKeepsRecords(),
);
export const latestFirstRow: ConformanceInitializer = broken(
  "gives the first row as latest",
  () => new MispickedLatest((rows) => rows[0]),
);
export const latestStepsAsText: ConformanceInitializer = broken(
  "orders steps as text",
  () => new MispickedLatest(stepsAsText),
);
export const callsSeqFirst: ConformanceInitializer = broken(
  "orders calls by seq then segment",
  () => new MisorderedCalls((a, b) => a.seq - b.seq || a.segment - b.segment),
);
export const callsAsText: ConformanceInitializer = broken(
  "orders calls as text",
  () => new MisorderedCalls(byText((c) => `${c.segment}:${c.seq}`)),
);
export const dropsLastRecord: ConformanceInitializer = broken("drops the last record", () => new DropsLastRecord());
export const historyFromNext: ConformanceInitializer = brokenWithRows(
  "reads history from the step after the one asked",
  (data) => new HistoryFromNext(data),
);
export const reordersRecords: ConformanceInitializer = broken(
  "reorders records",
  () => new MisorderedCalls((a, b) => b.segment - a.segment || b.seq - a.seq),
);
/** Every store it makes shares one data set, as a store that ignores its prefix would. */
export const ignoresPrefix: ConformanceInitializer = broken(
  "ignores its prefix",
  () => new MemoryCheckpointStore({ data: shared }),
);

export { memory };

export const batchOneByOne: ConformanceInitializer = broken(
  "commits a batch one write at a time",
  () => new BatchOneByOne(),
);
export const batchCheckedAgainstHead: ConformanceInitializer = broken(
  "checks a batch's records against the run before the batch",
  () => new BatchCheckedAgainstHead(),
);
