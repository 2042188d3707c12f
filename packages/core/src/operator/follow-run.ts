import { CheckpointStoreCorrupt, InvalidInput, StreamTooLong } from "../base/errors.js";
import type { JsonObject } from "../base/json.js";
import { assertRunId } from "../base/names.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { onStreamNews } from "../log/run-stream.js";
import { openStreamBatch, type StreamPart, type StreamStore, streamStore } from "../log/stream-read.js";
import { runStorage, STORAGE_OPTIONS, type StorageOptions } from "../run/storage.js";
import { openCheckpoint } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import { isEnded } from "../store/contract.js";
import { isAsleepOwner } from "../store/owners.js";
import { MAX_STREAM_PAGE } from "../store/streams.js";

/** Which run's stream to follow, from where, and how: the workers' storage options (their key, and `encryptionKey`). */
export interface FollowOptions extends StorageOptions {
  readonly runId: string;
  /** The offset of the first part to give (default 0): the one after the last a reader got, to go on where it left. */
  readonly from?: number;
  /** How often the store is read again while the run has nothing new, in ms (default 100). */
  readonly pollMs?: number;
  /** Stops following (the iteration ends) when aborted. */
  readonly signal?: AbortSignal;
}

const FOLLOW_OPTIONS: OptionTable<FollowOptions> = {
  ...STORAGE_OPTIONS,
  runId: true,
  from: true,
  pollMs: true,
  signal: true,
};

/**
 * One part of a run's stream as a follower gets it: its offset (give the next
 * one as `from` to go on after a reconnect), the attempt (the drive's segment)
 * that wrote it, and whether that attempt was cut off before the run saved
 * it: a part `abandoned` is void (the recovery made it again, under a new
 * attempt). An `attempt` part opens each drive; its `abandons`, `{ from, to }`,
 * are the parts before it that are void, told once more for a follower that
 * got them before the takeover.
 */
export interface FollowedPart {
  readonly offset: number;
  readonly attempt: number;
  readonly abandoned: boolean;
  readonly part: JsonObject;
}

/**
 * Follows a run's stream (see docs/protocol.md, "Streams") from any process,
 * whichever worker drives the run: every part from `from` on, verified, in
 * order, each once, then the new ones as the run's drives append them
 * (polling the store every `pollMs`; at once for a drive in this process),
 * across takeovers. Ends once the run is ended, paused, or asleep or waiting
 * for an event, and every part its last checkpoint counted was given. A
 * stream that reached its limit is `StreamTooLong` at that part; a batch
 * that is not the one sealed for its place, or missing, `CheckpointStoreCorrupt`.
 */
export async function* followRun(options: FollowOptions): AsyncGenerator<FollowedPart, void, undefined> {
  const where = "followRun";
  checkOptions(where, options, FOLLOW_OPTIONS);
  const { runId, from = 0, pollMs = 100, signal } = options;
  assertRunId(runId);
  if (!Number.isSafeInteger(from) || from < 0)
    throw new InvalidInput(`${where}: from must be a whole number ≥ 0, not ${String(from)}.`);
  if (!Number.isSafeInteger(pollMs) || pollMs < 1 || pollMs > 60_000)
    throw new InvalidInput(`${where}: pollMs must be a whole number from 1 to 60000, not ${String(pollMs)}.`);
  const { store, sealer } = runStorage(where, options);
  const streams = streamStore(where, store);
  /** The void ranges told so far: a part in one is abandoned. */
  const abandoned: VoidRange[] = [];
  let next = from;
  /** Up to where attempt parts were looked for ahead of the parts given. */
  let scanned = from;
  let news = false;
  const wake = { resolve: undefined as (() => void) | undefined };
  const unsubscribe = onStreamNews(store, runId, () => {
    news = true;
    wake.resolve?.();
  });
  const onAbort = () => wake.resolve?.();
  signal?.addEventListener("abort", onAbort);
  try {
    const aborted = (): boolean => signal?.aborted === true;
    if (aborted()) return;
    // The run as it stands before the first read: how many parts the stream holds at least, and whether it ended.
    let run = await runState(streams, sealer, runId, abandoned);
    let stopped = false;
    while (!aborted()) {
      news = false;
      const { parts, more, end } = await readFrom(streams, sealer, runId, next);
      // A full page: the attempt that voids its parts may lie pages ahead, stored already.
      if (more && end > scanned) scanned = await scanAhead(streams, sealer, runId, end, abandoned);
      for (const { offset, attempt, part } of parts)
        if (part["type"] === "attempt") tellAbandons(runId, offset, attempt, part, abandoned);
      for (const { offset, attempt, part } of parts) {
        if (part["type"] === "stream-full") throw new StreamTooLong(runId, Number(part["limit"]));
        const voided =
          part["type"] !== "attempt" && abandoned.some((range) => range.from <= offset && offset < range.to);
        yield { offset, attempt, abandoned: voided, part };
        next = offset + 1;
      }
      // Parts came: the run may have been taken up again since it was seen stopped, so it is looked at again.
      if (more || parts.length > 0) {
        stopped = false;
        continue;
      }
      // Parts land before the checkpoint that counts them: read after it, the stream holds every one.
      if (next < run.streamed) {
        if (run.ended && (await streams.stream(runId, 0)).length === 0) return; // dropped (`pruneRuns`, streamsOnly)
        throw new CheckpointStoreCorrupt(
          runId,
          `its stream ends at part ${next}, and its latest checkpoint counted ${run.streamed}: parts were deleted.`,
        );
      }
      // Once the run is seen stopped, one more read has them all.
      if (stopped) return;
      run = await runState(streams, sealer, runId, abandoned);
      stopped = run.stopped;
      if (stopped || news) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wake.resolve = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake.resolve = undefined;
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * The run as its latest checkpoint (verified) and lease stand: how many parts
 * the checkpoint counted (the stream holds them all), whether it ended, and
 * whether no drive writes its stream now, nor will until something outside it
 * acts: it is ended or paused, or the store holds its lease for a sleep or a
 * wait for an event. An ended run's parts past its count were written by a
 * drive a cancel cut off (or by its step that failed, which a retry runs
 * again): they are void, up to the attempt of a retry, added to `abandoned`.
 */
async function runState(
  store: StreamStore,
  sealer: Sealer,
  runId: string,
  abandoned: VoidRange[],
): Promise<{ readonly streamed: number; readonly ended: boolean; readonly stopped: boolean }> {
  const latest = openCheckpoint(sealer, await store.latest(runId));
  const streamed = latest.streamed ?? 0;
  const ended = isEnded(latest.status);
  const { segment } = latest;
  if (ended && !abandoned.some((range) => range.from === streamed && range.endedIn === segment))
    abandoned.push({ from: streamed, to: Number.POSITIVE_INFINITY, endedIn: segment });
  if (latest.status !== "running") return { streamed, ended, stopped: true };
  const lease = await store.leaseOf(runId);
  return { streamed, ended, stopped: lease !== undefined && isAsleepOwner(lease.owner) && lease.expiresAt > lease.now };
}

/**
 * Looks for attempt parts in the batches from `from` on, to the end of the
 * stream, adding what they void to `abandoned`: only a drive's first batch
 * (a segment after the one before) opens with one. Gives where it stopped.
 */
async function scanAhead(
  store: StreamStore,
  sealer: Sealer,
  runId: string,
  from: number,
  abandoned: VoidRange[],
): Promise<number> {
  let at = from;
  let segment = -1;
  for (;;) {
    const page = await store.stream(runId, at);
    for (const batch of page) {
      if (batch.segment !== segment && batch.offset >= from) {
        const [first] = openStreamBatch(sealer, runId, batch);
        if (first?.part["type"] === "attempt") tellAbandons(runId, first.offset, first.attempt, first.part, abandoned);
      }
      segment = batch.segment;
    }
    const last = page.at(-1);
    if (last === undefined) return at;
    at = last.offset + last.count;
    if (page.length < MAX_STREAM_PAGE) return at;
  }
}

/**
 * The verified parts from `from` on of one page of the stream, whether the
 * page was full (more may follow at once), and where it ends.
 */
async function readFrom(
  store: StreamStore,
  sealer: Sealer,
  runId: string,
  from: number,
): Promise<{ parts: StreamPart[]; more: boolean; end: number }> {
  const batches = await store.stream(runId, from);
  const parts: StreamPart[] = [];
  let expected = batches[0] === undefined ? from : Math.min(batches[0].offset, from);
  for (const batch of batches) {
    if (batch.offset !== expected || batch.offset + batch.count <= from)
      throw new CheckpointStoreCorrupt(
        runId,
        `its stream gives part ${batch.offset} where part ${expected} was due: parts are missing or out of place.`,
      );
    for (const part of openStreamBatch(sealer, runId, batch)) if (part.offset >= from) parts.push(part);
    expected = batch.offset + batch.count;
  }
  return { parts, more: batches.length >= MAX_STREAM_PAGE, end: expected };
}

/**
 * Parts `from` to `to - 1` are void: told by an attempt part, or past an
 * ended run's count (`endedIn`, the segment of its ended checkpoint), open
 * until a later attempt (a retry's) takes the run up.
 */
interface VoidRange {
  readonly from: number;
  to: number;
  readonly endedIn?: number;
}

/**
 * Adds the void range an `attempt` part at `offset`, of attempt `attempt`,
 * tells to `abandoned`, checked (a range of another shape is corrupt, not
 * ignored), and closes at it the open range of an ended run it took up again
 * (a retry: an attempt after the ended checkpoint's segment).
 */
function tellAbandons(runId: string, offset: number, attempt: number, part: JsonObject, abandoned: VoidRange[]): void {
  for (const range of abandoned)
    if (range.endedIn !== undefined && range.endedIn < attempt && range.from <= offset && offset < range.to)
      range.to = offset;
  const abandons = part["abandons"];
  if (abandons === undefined) return;
  const range = abandons as { from?: unknown; to?: unknown };
  if (
    typeof abandons !== "object" ||
    abandons === null ||
    !Number.isSafeInteger(range.from) ||
    !Number.isSafeInteger(range.to)
  )
    throw new CheckpointStoreCorrupt(runId, "an attempt part of a stream tells void parts of another shape.");
  abandoned.push({ from: range.from as number, to: range.to as number });
}
