import { CheckpointNotFound, InvalidInput } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import {
  checkBatch,
  checkEvent,
  checkInboxFrom,
  checkLeaseTerms,
  eventRefusal,
  WAITING,
  claimRefusal,
  commitRefusal,
  isClaimable,
  leaseAfterSave,
  recordRefusal,
  renewRefusal,
  saveRefusal,
} from "./rules.js";
import {
  atOrAfter,
  isEnded,
  type CallPosition,
  type CheckpointRow,
  type CheckpointStore,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  type QueuedRun,
  type QueuePlace,
  type RunPage,
  type RunQuery,
  type RunSummary,
  type RunWrite,
  type StoredCall,
  type StoredCheckpoint,
  type StoredEvent,
  type StoredStreamBatch,
  type StreamBatch,
} from "./contract.js";
import { checkRunQuery, matchesRunQuery, newestFirst, runPage } from "./listing.js";
import { checkQueuePlace, holdsSlot, isStart, isTake, queueOrder, queueRefusal } from "./queues.js";
import { checkedCall, checkedCheckpoint, checkedEvent, checkedHead, checkedStreamBatch } from "./rows.js";
import { checkStreamBatch, checkStreamFrom, streamPage, streamRefusal } from "./streams.js";

/** One run's rows as the memory store keeps them. */
export interface MemoryRun {
  readonly checkpoints: StoredCheckpoint[];
  readonly calls: StoredCall[];
  /** Records per segment, to check that each `seq` is the next one. */
  readonly counts: Map<number, number>;
  /** Who holds the run, by this process's clock; undefined when released. */
  lease: Lease | undefined;
  /** When its latest checkpoint was saved, by this process's clock (absent: never known, listed as 0). */
  savedAt?: number;
  /** Its latest checkpoint was saved waiting for a decision: left out of claimable listings. */
  waitsForDecision?: boolean;
  /** Events sent to it, by seq (absent: none yet). */
  inbox?: StoredEvent[];
  /** Its stream's batches, by offset (absent: none yet, or dropped). */
  stream?: StoredStreamBatch[];
  /** Its queue place, from its step 0 (absent: not queued), and when step 0 was accepted, in the store's order. */
  queue?: { readonly place: QueuePlace; readonly queuedAt: number };
}

/** Everything a memory store holds, by run id. */
export type MemoryData = Map<string, MemoryRun>;

/** Options of `MemoryCheckpointStore`. */
export interface MemoryStoreOptions {
  /**
   * The rows to keep, shared with whoever else holds this map: two stores
   * given one map behave like two connections to one database. Tests use it
   * to reopen a store, or to change stored rows as an attacker would.
   */
  readonly data?: MemoryData;
}

const MEMORY_STORE_OPTIONS: OptionTable<MemoryStoreOptions> = { data: true };

/**
 * A `CheckpointStore` in this process's memory: the protocol exactly
 * (compare-and-set, fencing, numbering), lost when the process ends. The
 * reference every other store is measured against; a runner may use it unsigned.
 */
export class MemoryCheckpointStore implements CheckpointStore {
  readonly inProcessOnly = true;
  readonly #runs: MemoryData;

  constructor(options: MemoryStoreOptions = {}) {
    checkOptions("MemoryCheckpointStore", options, MEMORY_STORE_OPTIONS);
    this.#runs = options.data ?? new Map();
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    checkRow(step, checkpoint);
    checkLeaseTerms(lease);
    const entry = this.#runs.get(runId);
    const head = headOf(runId, entry);
    const now = storeClock();
    const refused =
      saveRefusal(runId, step, checkpoint, head) ?? claimRefusal(runId, checkpoint, head, entry?.lease, lease, now);
    if (refused !== undefined) throw refused;
    const held = leaseAfterSave(checkpoint, lease, now, entry?.lease, entry?.inbox?.length);
    const queue = entry === undefined ? this.#queued(checkpoint.queue) : entry.queue;
    this.#takeSlot(runId, queue?.place, entry?.lease, held, isStart(step), now);
    const waitsForDecision = checkpoint.waitsForDecision === true;
    if (entry === undefined)
      this.#runs.set(runId, {
        checkpoints: [stored(runId, step, checkpoint)],
        calls: [],
        counts: new Map(),
        lease: held,
        savedAt: now,
        waitsForDecision,
        ...(queue === undefined ? {} : { queue }),
      });
    else {
      entry.checkpoints.push(stored(runId, step, checkpoint));
      entry.lease = held;
      entry.savedAt = now;
      entry.waitsForDecision = waitsForDecision;
    }
  }

  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    const entry = this.#runs.get(runId);
    const refused = renewRefusal(runId, segment, terms.owner, headOf(runId, entry), entry?.lease);
    if (refused !== undefined || entry === undefined) throw refused ?? new CheckpointNotFound(runId);
    const now = storeClock();
    const lease = { owner: terms.owner, expiresAt: now + terms.ms };
    this.#takeSlot(runId, entry.queue?.place, entry.lease, lease, false, now);
    entry.lease = lease;
    return lease;
  }

  async release(runId: string, segment: number, owner: string): Promise<void> {
    const entry = this.#runs.get(runId);
    if (entry?.checkpoints.at(-1)?.segment === segment && entry.lease?.owner === owner) entry.lease = undefined;
  }

  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    const lease = this.#runs.get(runId)?.lease;
    return lease === undefined ? undefined : { ...lease, now: storeClock() };
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const latest = this.#runs.get(runId)?.checkpoints.at(-1);
    if (latest === undefined) throw new CheckpointNotFound(runId);
    return checkedCheckpoint(runId, latest);
  }

  async *listUnfinished(name: string, options: ListOptions = {}): AsyncIterable<string> {
    for (const [runId, entry] of [...this.#runs]) {
      const latest = entry.checkpoints.at(-1);
      if (latest === undefined || latest.name !== name || isEnded(latest.status)) continue;
      if (options.claimable !== true) yield runId;
      else if (
        entry.queue === undefined &&
        isClaimable(latest.status, entry.lease, storeClock(), entry.waitsForDecision)
      )
        yield runId;
    }
  }

  async *listQueued(queue: string): AsyncIterable<QueuedRun> {
    const now = storeClock();
    const claimable = [];
    for (const [runId, entry] of this.#runs) {
      const latest = entry.checkpoints.at(-1);
      if (entry.queue?.place.queue !== queue || latest === undefined) continue;
      if (isClaimable(latest.status, entry.lease, now, entry.waitsForDecision))
        claimable.push({
          runId,
          name: latest.name,
          step: latest.step,
          ...entry.queue.place,
          queuedAt: entry.queue.queuedAt,
        });
    }
    for (const { runId, name, key, step } of claimable.sort(queueOrder))
      yield { runId, name, ...(key === undefined ? {} : { key }), step };
  }

  /** A run's queue place at its step 0, with its place in the store's order. */
  #queued(place: QueuePlace | undefined): MemoryRun["queue"] {
    queuedSoFar += 1;
    return place === undefined ? undefined : { place, queuedAt: queuedSoFar };
  }

  /**
   * Refuses (`QueueFull`) a write that takes a slot of the run's queue
   * (`isTake`) beyond its limits, counting every other run of the queue; a
   * `start` it allows (a save's take at step 0 or 1, never a renewal) is kept in the queue's starts.
   */
  #takeSlot(
    runId: string,
    place: QueuePlace | undefined,
    before: Lease | undefined,
    after: Lease | undefined,
    start: boolean,
    now: number,
  ): void {
    if (place === undefined || !isTake(before, after, now)) return;
    let held = 0;
    let heldByKey = 0;
    for (const [id, entry] of this.#runs) {
      const latest = entry.checkpoints.at(-1);
      if (id === runId || entry.queue?.place.queue !== place.queue || latest === undefined) continue;
      if (!holdsSlot(latest.status, entry.lease, now)) continue;
      held += 1;
      if (place.key !== undefined && entry.queue.place.key === place.key) heldByKey += 1;
    }
    const starts = (startsOf(this.#runs).get(place.queue) ?? []).filter((at) => at > now - (place.rate?.windowMs ?? 0));
    const counts = { held, heldByKey, starts: starts.length, earliestStart: starts[0] };
    const refused = queueRefusal(runId, place, counts, start, now);
    if (refused !== undefined) throw refused;
    if (start && place.rate !== undefined) startsOf(this.#runs).set(place.queue, [...starts, now]);
  }

  async delete(runId: string): Promise<void> {
    this.#runs.delete(runId);
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (!Number.isSafeInteger(seq) || seq < 0) throw new InvalidInput(`seq must be a whole number ≥ 0, not ${seq}.`);
    const entry = this.#runs.get(runId);
    const next = entry?.counts.get(segment) ?? 0;
    const refused = recordRefusal(runId, segment, seq, headOf(runId, entry), next);
    if (refused !== undefined || entry === undefined) throw refused ?? new CheckpointNotFound(runId);
    entry.calls.push(Object.freeze({ runId, segment, seq, sealed }));
    entry.counts.set(segment, next + 1);
  }

  async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    checkBatch(writes);
    const entry = this.#runs.get(runId);
    const now = storeClock();
    const verdict = commitRefusal(
      runId,
      writes,
      headOf(runId, entry),
      (segment) => entry?.counts.get(segment) ?? 0,
      entry?.lease,
      now,
      entry?.inbox?.length,
    );
    if ("refused" in verdict) throw verdict.refused;
    const save = writes.find((write) => write.kind === "save");
    const queue = entry === undefined && save !== undefined ? this.#queued(save.row.queue) : entry?.queue;
    if (save !== undefined) this.#takeSlot(runId, queue?.place, entry?.lease, verdict.lease, isStart(save.step), now);
    // Accepted as a whole: nothing below can be refused, so the writes land together.
    const run: MemoryRun = entry ?? {
      checkpoints: [],
      calls: [],
      counts: new Map<number, number>(),
      lease: undefined,
      ...(queue === undefined ? {} : { queue }),
    };
    for (const write of writes) {
      if (write.kind === "record") {
        run.calls.push(Object.freeze({ runId, segment: write.segment, seq: write.seq, sealed: write.sealed }));
        run.counts.set(write.segment, write.seq + 1);
      } else {
        run.checkpoints.push(stored(runId, write.step, write.row));
        run.savedAt = now;
        run.waitsForDecision = write.row.waitsForDecision === true;
      }
    }
    run.lease = verdict.lease;
    if (entry === undefined) this.#runs.set(runId, run);
  }

  async sendEvent(runId: string, event: { seq: number; key: string; sealed: string }): Promise<boolean> {
    checkEvent(event);
    const entry = this.#runs.get(runId);
    const inbox = entry?.inbox ?? [];
    const { seq, key, sealed } = event;
    const refused = eventRefusal(
      runId,
      seq,
      headOf(runId, entry),
      inbox.length,
      inbox.some((row) => row.key === key),
    );
    if (refused === "duplicate") return false;
    if (refused !== undefined || entry === undefined) throw refused ?? new CheckpointNotFound(runId);
    entry.inbox = [...inbox, Object.freeze({ runId, seq, key, sealed })];
    if (entry.lease?.owner === WAITING) entry.lease = undefined;
    return true;
  }

  async inbox(runId: string, from = 0): Promise<StoredEvent[]> {
    checkInboxFrom(from);
    const rows = this.#runs.get(runId)?.inbox ?? [];
    return rows.filter((row) => row.seq >= from).map((row) => checkedEvent(runId, row));
  }

  async appendStream(runId: string, batch: StreamBatch): Promise<void> {
    checkStreamBatch(batch);
    const entry = this.#runs.get(runId);
    const stream = entry?.stream ?? [];
    const last = stream.at(-1);
    const refused = streamRefusal(
      runId,
      headOf(runId, entry),
      last === undefined ? 0 : last.offset + last.count,
      batch,
    );
    if (refused !== undefined || entry === undefined) throw refused ?? new CheckpointNotFound(runId);
    const { segment, offset, count, sealed } = batch;
    entry.stream = [...stream, Object.freeze({ runId, segment, offset, count, sealed })];
  }

  async stream(runId: string, from = 0): Promise<StoredStreamBatch[]> {
    checkStreamFrom(from);
    return streamPage(this.#runs.get(runId)?.stream ?? [], from).map((row) => checkedStreamBatch(runId, row));
  }

  async dropStream(runId: string): Promise<void> {
    const entry = this.#runs.get(runId);
    if (entry !== undefined) delete entry.stream;
  }

  /** A page of runs of any status, newest first (see `CheckpointStore.listRuns`): every run is looked at, as suits memory. */
  async listRuns(query?: RunQuery): Promise<RunPage> {
    const resolved = checkRunQuery(query);
    const matching: RunSummary[] = [];
    for (const [runId, entry] of this.#runs) {
      const latest = entry.checkpoints.at(-1);
      if (latest === undefined) continue;
      const { step, status, segment, name, kind } = latest;
      const run = { runId, name, kind, step, status, segment, updatedAt: entry.savedAt ?? 0 };
      if (matchesRunQuery(resolved, run)) matching.push(entry.lease ? { ...run, lease: entry.lease } : run);
    }
    return runPage(resolved, matching.sort(newestFirst).slice(0, resolved.limit + 1));
  }

  async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    const rows = this.#runs.get(runId)?.checkpoints ?? [];
    return rows.filter((row) => row.step >= from).map((row) => checkedCheckpoint(runId, row));
  }

  async calls(runId: string, from?: CallPosition): Promise<StoredCall[]> {
    const rows = this.#runs.get(runId)?.calls ?? [];
    return rows.filter((row) => from === undefined || atOrAfter(row, from)).map((row) => checkedCall(runId, row));
  }

  async close(): Promise<void> {}
}

/** Incremented at each new run: the order in which the memory stores of this process accepted step 0s. */
let queuedSoFar = 0;

/** The starts of each queue (when, by the store's clock), per shared map of rows: two stores of one map count them together. */
const startsByData = new WeakMap<MemoryData, Map<string, number[]>>();

/** The starts of each queue kept for `data`. */
function startsOf(data: MemoryData): Map<string, number[]> {
  const byQueue = startsByData.get(data) ?? new Map<string, number[]>();
  startsByData.set(data, byQueue);
  return byQueue;
}

/**
 * The memory store's clock: this process's monotonic clock on the epoch's
 * scale. It ignores changes to `Date.now`, as another store's server clock would.
 */
function storeClock(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

/** The run's head, its latest checkpoint, checked: a row of another shape (changed in the shared map) is corrupt. */
function headOf(runId: string, entry: MemoryRun | undefined) {
  const latest = entry?.checkpoints.at(-1);
  return latest === undefined ? undefined : checkedHead(runId, latest);
}

function stored(runId: string, step: number, row: CheckpointRow): StoredCheckpoint {
  const { status, segment, name, kind, sealed } = row;
  return Object.freeze({ runId, step, status, segment, name, kind, sealed });
}

function checkRow(step: number, row: CheckpointRow): void {
  checkQueuePlace(row.queue);
  if (!Number.isSafeInteger(step) || step < 0) throw new InvalidInput(`step must be a whole number ≥ 0, not ${step}.`);
  if (!Number.isSafeInteger(row.segment) || row.segment < 0) {
    throw new InvalidInput(`segment must be a whole number ≥ 0, not ${row.segment}.`);
  }
}
