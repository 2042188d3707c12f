import { isEnded, type RunKind, type RunStatus, UNFINISHED } from "./run-status.js";
import type { StoredStreamBatch, StreamBatch } from "./streams.js";

export { isEnded, type RunKind, type RunStatus, UNFINISHED };
export type { StoredStreamBatch, StreamBatch };

/**
 * How many call records each segment of a run holds, by segment number: what a
 * checkpoint seals so that a read finding fewer in any segment is corrupt.
 */
export type SegmentCounts = readonly number[];

/** True for a sealed per-segment count: whole numbers ≥ 0. */
export function isSegmentCounts(value: unknown): value is SegmentCounts {
  return Array.isArray(value) && value.every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
}

/**
 * A checkpoint as a store keeps it: plain columns it may index, and the sealed
 * payload. Core seals the payload and checks on every read that the columns
 * match what is sealed inside it; a store never sees the key.
 */
export interface CheckpointRow {
  readonly status: RunStatus;
  /** The call-log segment of the worker that wrote this step. */
  readonly segment: number;
  /** The run's name: its flow's or tool loop's. */
  readonly name: string;
  readonly kind: RunKind;
  /** The sealed envelope; opaque to the store. */
  readonly sealed: string;
  /**
   * Set on the `running` checkpoint a recovery saves when it stops for a
   * decision (a call in doubt): the store leaves the run out of claimable
   * listings until a save without it (an operator's decision claims the run).
   * A mark for the store's index, not a column `latest` gives back.
   */
  readonly waitsForDecision?: boolean;
  /**
   * Set on step 0 of a run started on a queue (`runner.start` with a
   * `queue`): its place and its queue's limits, sealed in its envelope too.
   * The store keeps the one step 0 gives for the run's life, and enforces it
   * on every take of the run (see docs/protocol.md, "Queues"); a later row
   * may name none (a runner's do not) or another, which the store ignores. A
   * mark for the store's index, not a column `latest` gives back.
   */
  readonly queue?: QueuePlace;
}

/**
 * A queued run's place and its queue's limits, as a store keeps them from
 * its step 0. Every run of a queue carries the queue's limits.
 */
export interface QueuePlace {
  /** The queue's name: 1 to 128 characters. */
  readonly queue: string;
  /** Higher goes first; FIFO within a priority. A whole number (default 0). */
  readonly priority: number;
  /** The run's concurrency key (a customer, a tenant): `perKey` limits the runs of one key. */
  readonly key?: string;
  /** At most this many runs of the queue hold a lease at once, fleet-wide. */
  readonly concurrency?: number;
  /** At most this many runs of one concurrency key hold a lease at once. */
  readonly perKey?: number;
  /** At most `limit` runs of the queue start (are first taken) in any `windowMs`, by the store's clock. */
  readonly rate?: { readonly limit: number; readonly windowMs: number };
}

/** A claimable run of a queue, as `listQueued` gives it. */
export interface QueuedRun {
  readonly runId: string;
  /** The run's name: which flow or tool loop serves it. */
  readonly name: string;
  /** The run's concurrency key, when it has one: a worker whose claim of one run of a key was refused skips the key's others. */
  readonly key?: string;
  /**
   * The run's latest step, when the store gives it: a claim of a run at step
   * 0 is a start, so a worker whose queue is out of rate skips those and
   * still takes the runs that started already (woken, or orphaned).
   */
  readonly step?: number;
}

/** A checkpoint row read back, with its key. */
export interface StoredCheckpoint extends CheckpointRow {
  readonly runId: string;
  readonly step: number;
}

/** A place in a run's call log: record `seq` of segment `segment`. Records are ordered by segment, then seq. */
export interface CallPosition {
  readonly segment: number;
  readonly seq: number;
}

/** True when `at` is `from` or after it in the log's order (`calls(runId, from)` gives these). */
export function atOrAfter(at: CallPosition, from: CallPosition): boolean {
  return at.segment > from.segment || (at.segment === from.segment && at.seq >= from.seq);
}

/** One call-log record as a store keeps it. */
export interface StoredCall {
  readonly runId: string;
  readonly segment: number;
  /** The record's number in its segment: 0, 1, 2, … with no gap. */
  readonly seq: number;
  /** The sealed envelope; opaque to the store. */
  readonly sealed: string;
}

/**
 * One event of a run's inbox as a store keeps it: what `sendEvent` appended
 * (see docs/protocol.md, "Events").
 */
export interface StoredEvent {
  readonly runId: string;
  /** Its number in the run's inbox: 0, 1, 2, … with no gap, in the order the store accepted them. */
  readonly seq: number;
  /** The sender's idempotency key: an inbox holds at most one event per key. */
  readonly key: string;
  /** The sealed envelope; opaque to the store. */
  readonly sealed: string;
}

/** Who holds a run, and until when by the store's clock. */
export interface Lease {
  /** The drive holding the run: its worker's id (`workerId()`, unless the runner names another) and a suffix of its own. */
  readonly owner: string;
  /** When the lease runs out: milliseconds since the epoch, by the store's clock. */
  readonly expiresAt: number;
}

/** A run's lease as `leaseOf` reads it, with the store's clock at the read. */
export interface LeaseView extends Lease {
  /** The store's clock when it read the lease (ms since the epoch): the lease is live while `expiresAt > now`. */
  readonly now: number;
}

/** What a worker asks of a run's lease when it saves or renews. */
export interface LeaseTerms {
  readonly owner: string;
  /** How long the lease lasts from the store's now, in ms. 0 takes no lease: the run is claimable at once. */
  readonly ms: number;
}

/** What a save asks of the run's lease. */
export interface LeaseClaim extends LeaseTerms {
  /** Claim even while another owner's lease is live (an operator's takeover; the old owner is fenced by the segment). */
  readonly takeOver?: boolean;
  /**
   * With the owner `WAITING` (a run put to wait for an event): how many events
   * of the run's inbox the worker read before it saved. A save that finds the
   * inbox holding more takes no lease: the run is claimable at once, so an
   * event sent while the worker decided to wait is never missed.
   */
  readonly events?: number;
}

/**
 * One write of a `commit`: a call record (as `recordCall` takes it) or a
 * checkpoint (as `save` takes it).
 */
export type RunWrite =
  | { readonly kind: "record"; readonly segment: number; readonly seq: number; readonly sealed: string }
  | { readonly kind: "save"; readonly step: number; readonly row: CheckpointRow; readonly lease?: LeaseClaim };

/** Options of `listUnfinished`. */
export interface ListOptions {
  /**
   * Only runs a worker may claim now: `running`, with no lease or one that ran
   * out by the store's clock, and not waiting for a decision. Paused runs wait
   * for a resume. Queued runs are left out: `listQueued` gives them, in
   * their queue's order.
   */
  readonly claimable?: boolean;
}

/**
 * The protocol every store keeps. All methods are async and atomic; a store
 * never holds the signing key. `@durable/conformance` checks every rule below.
 */
export interface CheckpointStore {
  /**
   * Saves a checkpoint by compare-and-set on the step number.
   *
   * Accepted only when: `step` is 0 and nothing is stored for the run; or `step`
   * is exactly one past the latest stored step, the latest row is not ended
   * (`done`/`failed`), its `flow` and `kind` equal the new row's, and the new
   * row's `segment` is not lower than the latest row's. A raised segment is a
   * claim: from then on `recordCall` refuses records of lower segments.
   * Every other save is refused with `CheckpointConflict` and writes nothing.
   *
   * Leases (see docs/protocol.md, "Leases"): a claim (a raised segment) of a run
   * whose lease is live by the store's clock and held by another owner is
   * refused with `LeaseHeld`, unless `lease.takeOver`. An accepted `running`
   * save with `lease.ms > 0` sets the lease to `lease.owner` until the store's
   * now + `lease.ms`; any other accepted save (paused, ended, no lease) releases
   * it. No `lease` is the same as `{ owner: "", ms: 0 }`. A save for
   * `WAITING` whose `lease.events` is below the number of events the run's
   * inbox holds takes no lease either (`leaseAfterSave`).
   */
  save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void>;

  /**
   * Extends the lease of the worker that holds the run to the store's now +
   * `terms.ms`, and returns it. Refused with `CheckpointConflict` unless the
   * latest checkpoint is `running`, its segment is `segment`, and the lease is
   * `terms.owner`'s (live or run out, but not released); an unknown run is
   * `CheckpointNotFound`.
   */
  renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease>;

  /** Releases the lease when `segment` is the latest checkpoint's and `owner` holds it; otherwise does nothing. */
  release(runId: string, segment: number, owner: string): Promise<void>;

  /** The run's lease with the store's clock, or undefined when the run is unknown or holds none. */
  leaseOf(runId: string): Promise<LeaseView | undefined>;

  /**
   * The row with the highest step. `CheckpointNotFound` when nothing is stored
   * for the run; `CheckpointStoreCorrupt` when a row it reads, or its head of
   * the run, has another shape (`checkedCheckpoint`, `checkedHead`), as for
   * every operation.
   */
  latest(runId: string): Promise<StoredCheckpoint>;

  /**
   * The ids of every run named `name` whose latest row is `running` or `paused`,
   * each once, in no set order; with `claimable`, only `running` runs with no
   * lease or one run out by the store's clock whose latest checkpoint was not
   * saved `waitsForDecision`. Streams, so memory stays flat however many runs
   * there are, and reads one index per page: one query per page however many
   * runs wait for a decision.
   */
  listUnfinished(name: string, options?: ListOptions): AsyncIterable<string>;

  /** Removes every checkpoint, call record, event and stream batch of the run, and nothing of any other run. Unknown runs are a no-op. */
  delete(runId: string): Promise<void>;

  /**
   * Appends one call-log record.
   *
   * Accepted only when the run exists, is not ended, `segment` equals the
   * segment of the run's latest checkpoint, and `seq` is exactly the number of
   * records already stored for that segment (0 first). Every other record is
   * refused with `CheckpointConflict` (a fenced worker, a duplicate number, a
   * gap); an unknown run is `CheckpointNotFound`. When it resolves, the record
   * is durable.
   */
  recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void>;

  /**
   * Optional, for a store that batches: applies `writes` to the run in their
   * order as one atomic commit, each by the rules of `recordCall` or `save`
   * over the run as the writes before it in the batch left it. Either every
   * write is accepted and, when it resolves, durable; or the first refusal is
   * thrown and nothing is written. A batch holds 1 to `MAX_BATCH_WRITES`
   * writes, at most one of them a checkpoint (`InvalidInput` otherwise). The
   * runner uses it to make one commit of everything between two tool calls.
   */
  commit?(runId: string, writes: readonly RunWrite[]): Promise<void>;

  /**
   * Optional, the inspection capability (with `history`): a page of runs of
   * any status, newest first by when their latest checkpoint was saved (the
   * store's clock), then by run id from the highest; filtered by status, name
   * and run id prefix; `next` is the cursor of the following page. Read from
   * an index, one query per page; it reads, it changes nothing. A bad query or
   * cursor is `InvalidInput` (`checkRunQuery`). What a console lists.
   */
  listRuns?(query?: RunQuery): Promise<RunPage>;

  /**
   * Optional, the inspection capability (with `listRuns`): every checkpoint
   * stored for the run from step `from` (0 when not given) on, by step; empty
   * for an unknown run. Read as a range of an index, so a read from a late
   * step costs what it returns. A runner whose store has it seals each
   * checkpoint as the changes since the one before (see docs/protocol.md,
   * "The chain of checkpoints"), and reads a run back from its snapshot on.
   */
  history?(runId: string, from?: number): Promise<StoredCheckpoint[]>;

  /**
   * Every call record of the run, ordered by segment then seq; with `from`,
   * only those at or after that place (a later seq of its segment, or a later
   * segment), read as a range of an index: a recovery reads the records of
   * the round it goes on with, not the run's whole log. Empty for an unknown run.
   */
  calls(runId: string, from?: CallPosition): Promise<StoredCall[]>;

  /**
   * Optional, the queues capability: the claimable runs of `queue` (as
   * `listUnfinished`'s `claimable` says, of runs whose step 0 named this
   * queue), each with its name and concurrency key, highest priority first, then in the order their step 0 was
   * accepted, then by run id; streamed a page at a time from an index. A
   * store with it keeps `CheckpointRow.queue` and enforces its limits on
   * every take (see docs/protocol.md, "Queues"); a runner refuses to start a
   * queued run on a store without it.
   */
  listQueued?(queue: string): AsyncIterable<QueuedRun>;

  /**
   * Optional, the events capability (with `inbox`): appends one event to the
   * run's inbox, atomically. Resolves true once it is durable; false, writing
   * nothing, when the inbox holds an event with this `key` already (a
   * resend, whatever became of the run since). Otherwise refused, writing
   * nothing: an unknown run `CheckpointNotFound`; an ended run (`done`,
   * `failed`) `RunAlreadyEnded`; a `seq` other than the number of events the inbox
   * holds `CheckpointConflict` (another sender was first: read the inbox
   * again). When the run's lease is held by `WAITING` (a run waiting for an
   * event), the same write releases it: the run is claimable at once.
   */
  sendEvent?(
    runId: string,
    event: { readonly seq: number; readonly key: string; readonly sealed: string },
  ): Promise<boolean>;

  /**
   * Optional, the events capability: the run's inbox from event `from` (0
   * when not given) on, by seq; empty for an unknown run. A `from` that is
   * not a whole number ≥ 0 is `InvalidInput` (`checkInboxFrom`).
   */
  inbox?(runId: string, from?: number): Promise<StoredEvent[]>;

  /**
   * Optional, the streams capability (with `stream` and `dropStream`):
   * appends a batch of the run's stream, atomically. Accepted only when the
   * run exists and is not ended, `batch.segment` is its latest checkpoint's
   * segment (a fenced worker streams nothing more), and `batch.offset` is
   * the number of parts the stream holds; otherwise `CheckpointConflict` (an
   * unknown run `CheckpointNotFound`). Durable when it resolves. A malformed
   * batch is `InvalidInput` (`checkStreamBatch`); the rules are `streamRefusal`.
   */
  appendStream?(runId: string, batch: StreamBatch): Promise<void>;

  /**
   * Optional, the streams capability: the batches of the run's stream that
   * hold part `from` (0 when not given) or a later one, by offset, at most
   * `MAX_STREAM_PAGE`, read as a range of an index; empty for an unknown
   * run or a dropped stream. A bad `from` is `InvalidInput` (`checkStreamFrom`).
   */
  stream?(runId: string, from?: number): Promise<StoredStreamBatch[]>;

  /** Optional, the streams capability: removes the run's stream, and nothing else (`pruneStreams` on ended runs). */
  dropStream?(runId: string): Promise<void>;

  /**
   * True when the store lives in this process only (the memory store): a runner
   * may then work unsigned. Every other store needs `checkpointKey`.
   */
  readonly inProcessOnly?: boolean;

  /**
   * Releases the store's connections or files. A store that holds them
   * refuses every operation after it, connecting nothing again, with
   * `closedWhileUsed` (`StoreUnavailable` naming the run and the operation).
   */
  close(): Promise<void>;
}

/** What `listRuns` is asked for: every filter is optional, and all that are given must match. */
export interface RunQuery {
  /** Only runs whose latest checkpoint has one of these statuses. */
  readonly status?: readonly RunStatus[];
  /** Only runs of this name (exactly): a flow's or a tool loop's. */
  readonly name?: string;
  /** Only runs whose id starts with this text (case-sensitive, 1 to 256 characters). */
  readonly runIdPrefix?: string;
  /** How many runs a page holds at most (1 to `MAX_RUN_PAGE`, default 50). */
  readonly limit?: number;
  /** Where the page starts: the `next` of the page before. */
  readonly cursor?: string;
}

/** One run as a listing shows it: its latest checkpoint's plain columns, when it changed, and its lease. */
export interface RunSummary {
  readonly runId: string;
  readonly name: string;
  readonly kind: RunKind;
  readonly step: number;
  readonly status: RunStatus;
  readonly segment: number;
  /** When its latest checkpoint was saved, in ms since the epoch by the store's clock (0 when the store kept no time). */
  readonly updatedAt: number;
  /** Who holds it, until when by the store's clock; absent when released. */
  readonly lease?: Lease;
}

/** A page of runs, newest first; `next` is the cursor of the page after it, absent on the last page. */
export interface RunPage {
  readonly runs: readonly RunSummary[];
  readonly next?: string;
}
