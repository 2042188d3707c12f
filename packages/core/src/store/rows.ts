import { CheckpointStoreCorrupt } from "../base/errors.js";
import type { RunKind, RunStatus, StoredCall, StoredCheckpoint, StoredEvent } from "./contract.js";
import type { RunHead } from "./rules.js";
import type { StoredStreamBatch } from "./contract.js";

/*
 * What a stored row must look like before anything reads it: a store checks
 * each row it reads (a checkpoint, a call record, its own head of the run)
 * with these, so a row of another shape (changed past the store, or written
 * by a bug) is `CheckpointStoreCorrupt` naming the run, never a `TypeError`,
 * an unknown run or a store that seems down.
 */

const STATUSES: ReadonlySet<unknown> = new Set<RunStatus>(["running", "paused", "done", "failed"]);
const KINDS: ReadonlySet<unknown> = new Set<RunKind>(["flow", "loop"]);

/** The plain columns of a checkpoint row as a store read them, of any type. */
export interface CheckpointColumns {
  readonly step: unknown;
  readonly status: unknown;
  readonly segment: unknown;
  readonly name: unknown;
  readonly kind: unknown;
  readonly sealed: unknown;
}

/** The columns of a call record as a store read them, of any type. */
export interface CallColumns {
  readonly segment: unknown;
  readonly seq: unknown;
  readonly sealed: unknown;
}

/** The columns of an inbox event as a store read them, of any type. */
export interface EventColumns {
  readonly seq: unknown;
  readonly key: unknown;
  readonly sealed: unknown;
}

/** The columns of a store's head of a run (its latest step, status, segment, name, kind) as read, of any type. */
export interface HeadColumns {
  readonly step: unknown;
  readonly status: unknown;
  readonly segment: unknown;
  readonly name: unknown;
  readonly kind: unknown;
}

/** A stored checkpoint of `runId` from the columns read, or `CheckpointStoreCorrupt` naming the column of the wrong shape. */
export function checkedCheckpoint(runId: string, row: CheckpointColumns): StoredCheckpoint {
  const { step, status, segment, name, kind } = checkedHead(runId, row, "checkpoint row");
  if (typeof row.sealed !== "string") throw malformedColumn(runId, "checkpoint row", "sealed", row.sealed);
  return { runId, step, status, segment, name, kind, sealed: row.sealed };
}

/** A stored call record of `runId` from the columns read, or `CheckpointStoreCorrupt` naming the column of the wrong shape. */
export function checkedCall(runId: string, row: CallColumns): StoredCall {
  const segment = wholeNumber(runId, "call record", "segment", row.segment);
  const seq = wholeNumber(runId, "call record", "seq", row.seq);
  if (typeof row.sealed !== "string") throw malformedColumn(runId, "call record", "sealed", row.sealed);
  return { runId, segment, seq, sealed: row.sealed };
}

/** A stored inbox event of `runId` from the columns read, or `CheckpointStoreCorrupt` naming the column of the wrong shape. */
export function checkedEvent(runId: string, row: EventColumns): StoredEvent {
  const seq = wholeNumber(runId, "event", "seq", row.seq);
  if (typeof row.key !== "string") throw malformedColumn(runId, "event", "key", row.key);
  if (typeof row.sealed !== "string") throw malformedColumn(runId, "event", "sealed", row.sealed);
  return { runId, seq, key: row.key, sealed: row.sealed };
}

/** The columns a store read of one stream batch. */
export interface StreamColumns {
  readonly segment: unknown;
  readonly offset: unknown;
  readonly count: unknown;
  readonly sealed: unknown;
}

/** A stream batch from the columns read, or `CheckpointStoreCorrupt` naming the column of another shape. */
export function checkedStreamBatch(runId: string, row: StreamColumns): StoredStreamBatch {
  const segment = wholeNumber(runId, "stream batch", "segment", row.segment);
  const offset = wholeNumber(runId, "stream batch", "offset", row.offset);
  const count = wholeNumber(runId, "stream batch", "count", row.count);
  if (count === 0) throw malformedColumn(runId, "stream batch", "count", row.count);
  if (typeof row.sealed !== "string") throw malformedColumn(runId, "stream batch", "sealed", row.sealed);
  return { runId, segment, offset, count, sealed: row.sealed };
}

/**
 * A store's head of `runId` from the columns read (what its compare-and-set
 * and lease rules read), or `CheckpointStoreCorrupt`: a head of the wrong
 * shape never decides a refusal.
 */
export function checkedHead(runId: string, head: HeadColumns, what = "head"): RunHead {
  const step = wholeNumber(runId, what, "step", head.step);
  const segment = wholeNumber(runId, what, "segment", head.segment);
  if (!STATUSES.has(head.status)) throw malformedColumn(runId, what, "status", head.status);
  if (!KINDS.has(head.kind)) throw malformedColumn(runId, what, "kind", head.kind);
  if (typeof head.name !== "string" || head.name === "") throw malformedColumn(runId, what, "name", head.name);
  return { step, status: head.status as RunStatus, segment, name: head.name, kind: head.kind as RunKind };
}

/**
 * A whole number ≥ 0 read from a store (a number, or the digits a text
 * column or a Redis hash keeps), or `CheckpointStoreCorrupt` naming the
 * column: for counts and lease expiries a store keeps beside its head.
 */
export function wholeNumber(runId: string, what: string, column: string, value: unknown): number {
  const number = typeof value === "string" && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof number === "bigint" && number >= 0n && number <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(number);
  if (!Number.isSafeInteger(number) || (number as number) < 0) throw malformedColumn(runId, what, column, value);
  return number as number;
}

/** The error of a stored column that holds a value no save writes, naming the run, the row and the column. */
export function malformedColumn(runId: string, what: string, column: string, value: unknown): CheckpointStoreCorrupt {
  return new CheckpointStoreCorrupt(
    runId,
    `its stored ${what} holds ${describe(value)} as its ${column}, which no save writes: the row was changed past the store, or written by a bug.`,
  );
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "bigint") return `${value}n`;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
