/** Where a run stands. `done` and `failed` are ended: a store refuses any later save. */
export type RunStatus = "running" | "paused" | "done" | "failed";

/** What kind of run a checkpoint belongs to. */
export type RunKind = "flow" | "loop";

/** The statuses `listUnfinished` returns. */
export const UNFINISHED: readonly RunStatus[] = ["running", "paused"];

/** True for `done` and `failed`. */
export function isEnded(status: RunStatus): boolean {
  return status === "done" || status === "failed";
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
  /** The flow's name; for a tool loop, the loop's name. */
  readonly flow: string;
  readonly kind: RunKind;
  /** The sealed envelope; opaque to the store. */
  readonly sealed: string;
}

/** A checkpoint row read back, with its key. */
export interface StoredCheckpoint extends CheckpointRow {
  readonly runId: string;
  readonly step: number;
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
   */
  save(runId: string, step: number, checkpoint: CheckpointRow): Promise<void>;

  /** The row with the highest step. `CheckpointNotFound` when nothing is stored for the run. */
  latest(runId: string): Promise<StoredCheckpoint>;

  /**
   * The ids of every run of `flow` whose latest row is `running` or `paused`,
   * each once, in no set order. Streams, so memory stays flat however many runs there are.
   */
  listUnfinished(flow: string): AsyncIterable<string>;

  /** Removes every checkpoint and call record of the run, and nothing of any other run. Unknown runs are a no-op. */
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

  /** Every call record of the run, ordered by segment then seq. Empty for an unknown run. */
  calls(runId: string): Promise<StoredCall[]>;

  /**
   * True when the store lives in this process only (the memory store): a runner
   * may then work unsigned. Every other store needs `checkpointKey`.
   */
  readonly inProcessOnly?: boolean;

  /** Releases the store's connections or files. */
  close(): Promise<void>;
}
