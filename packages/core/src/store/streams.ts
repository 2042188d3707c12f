import { CheckpointConflict, CheckpointNotFound, InvalidInput } from "../base/errors.js";
import type { RunStatus } from "./run-status.js";

/**
 * The stream rules (see docs/protocol.md, "Streams"): what a store with the
 * streams capability accepts, shared by every store written in TypeScript.
 */

/** The most parts one stream batch holds. */
export const MAX_STREAM_BATCH = 1_000;

/** The most batches one `stream` read gives: a reader pages from the end of the last. */
export const MAX_STREAM_PAGE = 1_000;

/** One batch of a run's stream as a writer appends it: parts `offset` to `offset + count - 1`, sealed, of a drive's segment. */
export interface StreamBatch {
  readonly segment: number;
  readonly offset: number;
  readonly count: number;
  readonly sealed: string;
}

/** A batch as a store keeps and gives it back. */
export interface StoredStreamBatch extends StreamBatch {
  readonly runId: string;
}

/**
 * Why a store refuses `batch` for a run whose latest checkpoint is `head`
 * (undefined: nothing stored) and whose stream holds `length` parts, or
 * undefined when it accepts it. As a call record: an unknown run is
 * `CheckpointNotFound`; an ended run, a segment other than the latest
 * checkpoint's (a fenced worker), or an offset other than the stream's length
 * (a gap, a part written twice) is `CheckpointConflict`.
 */
export function streamRefusal(
  runId: string,
  head: { readonly status: RunStatus; readonly segment: number } | undefined,
  length: number,
  batch: StreamBatch,
): CheckpointNotFound | CheckpointConflict | undefined {
  if (head === undefined) return new CheckpointNotFound(runId);
  if (head.status === "done" || head.status === "failed")
    return new CheckpointConflict(runId, `the run ended (${head.status}): its stream takes no more parts.`);
  if (batch.segment !== head.segment)
    return new CheckpointConflict(
      runId,
      `stream parts of segment ${batch.segment} refused: the run's latest checkpoint is of segment ${head.segment} (another worker claimed it).`,
    );
  if (batch.offset !== length)
    return new CheckpointConflict(
      runId,
      `stream parts from ${batch.offset} refused: the stream holds ${length}, so the next part is ${length}.`,
    );
  return undefined;
}

/** Checks a batch before a store reads anything: whole numbers ≥ 0, 1 to `MAX_STREAM_BATCH` parts, a sealed string. */
export function checkStreamBatch(batch: StreamBatch): void {
  if (typeof batch !== "object" || batch === null)
    throw new InvalidInput("a stream batch is an object { segment, offset, count, sealed }.");
  for (const key of ["segment", "offset"] as const)
    if (!Number.isSafeInteger(batch[key]) || batch[key] < 0)
      throw new InvalidInput(`a stream batch's ${key} must be a whole number ≥ 0, not ${String(batch[key])}.`);
  if (!Number.isSafeInteger(batch.count) || batch.count < 1 || batch.count > MAX_STREAM_BATCH)
    throw new InvalidInput(`a stream batch holds 1 to ${MAX_STREAM_BATCH} parts, not ${String(batch.count)}.`);
  if (typeof batch.sealed !== "string") throw new InvalidInput("a stream batch's sealed envelope must be a string.");
}

/** Checks where `stream(runId, from)` reads from: a whole number ≥ 0, or `InvalidInput`. */
export function checkStreamFrom(from: number): void {
  if (!Number.isSafeInteger(from) || from < 0)
    throw new InvalidInput(`a stream is read from a whole number ≥ 0, not ${String(from)}.`);
}

/** The batches of `batches` (by offset) that hold part `from` or a later one, at most `MAX_STREAM_PAGE`. */
export function streamPage<T extends StreamBatch>(batches: readonly T[], from: number): T[] {
  return batches.filter((batch) => batch.offset + batch.count > from).slice(0, MAX_STREAM_PAGE);
}
