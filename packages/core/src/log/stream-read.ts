import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { isJsonObject, type JsonObject } from "../base/json.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import { checkedStreamBatch } from "../store/rows.js";
import type { StoredStreamBatch } from "../store/contract.js";
import { MAX_STREAM_PAGE } from "../store/streams.js";

/** A store with the streams capability. */
export type StreamStore = CheckpointStore & Required<Pick<CheckpointStore, "appendStream" | "stream" | "dropStream">>;

/** `store` with its streams capability, or `InvalidInput` naming `where` for a store without it. */
export function streamStore(where: string, store: CheckpointStore): StreamStore {
  if (
    typeof store.appendStream !== "function" ||
    typeof store.stream !== "function" ||
    typeof store.dropStream !== "function"
  )
    throw new InvalidInput(
      `${where}: this store has no streams capability (appendStream, stream and dropStream): use a store that keeps run streams, or upgrade it.`,
    );
  return store as StreamStore;
}

/**
 * How many parts the run's stream holds, read from the batch of part
 * `counted - 1` on (a checkpoint counted `counted`); fewer than `counted` is
 * `CheckpointStoreCorrupt`: parts it counted are gone.
 */
export async function streamLength(store: StreamStore, runId: string, counted: number): Promise<number> {
  let length = 0;
  let from = Math.max(0, counted - 1);
  for (;;) {
    const page = await store.stream(runId, from);
    const last = page.at(-1);
    if (last !== undefined) length = last.offset + last.count;
    if (last === undefined || page.length < MAX_STREAM_PAGE) break;
    from = length;
  }
  if (length < counted)
    throw new CheckpointStoreCorrupt(
      runId,
      `its stream holds ${length} parts, and its latest checkpoint counted ${counted}: parts were deleted.`,
    );
  return length;
}

/** One part of a run's stream, verified: its place, the attempt (the drive's segment) that wrote it, and the part. */
export interface StreamPart {
  readonly offset: number;
  readonly attempt: number;
  readonly part: JsonObject;
}

/**
 * Opens a stored batch and checks it is the one sealed for its place: this
 * run's, at its offset, of its segment, holding as many parts as its count,
 * each an object with a `type`. Anything else is `CheckpointStoreCorrupt`.
 */
export function openStreamBatch(sealer: Sealer, runId: string, stored: StoredStreamBatch): StreamPart[] {
  const row = checkedStreamBatch(runId, stored);
  const body = sealer.open("stream", row.sealed, row);
  const parts = isJsonObject(body) ? body["parts"] : undefined;
  const ok =
    isJsonObject(body) &&
    body["runId"] === runId &&
    body["segment"] === row.segment &&
    body["offset"] === row.offset &&
    body["count"] === row.count &&
    Array.isArray(parts) &&
    parts.length === row.count &&
    parts.every((part) => isJsonObject(part) && typeof part["type"] === "string");
  if (!ok)
    throw new CheckpointStoreCorrupt(
      runId,
      `the stream batch at part ${row.offset} is not the one sealed for that place: parts are missing, moved or changed.`,
    );
  return (parts as JsonObject[]).map((part, index) => ({ offset: row.offset + index, attempt: row.segment, part }));
}
