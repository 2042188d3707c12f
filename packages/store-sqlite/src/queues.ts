import {
  CheckpointStoreCorrupt,
  checkQueuePlace,
  InvalidInput,
  isTake,
  type Lease,
  type QueuePlace,
  queueRefusal,
} from "@durable/core/store";
import { heldLease, type RunRow, type Statements } from "./statements.js";

/*
 * The queues capability of the SQLite store (see docs/protocol.md, "Queues"):
 * a queued run's place kept on its head from step 0, each take counted over
 * the holders index inside the write that takes (the group's `BEGIN
 * IMMEDIATE` transaction serialises every writer of the file), a queue's
 * starts kept as rows, and its claimable runs listed in its order.
 */

/** A queued run's place as its head keeps it: every column NULL for a run on no queue. */
interface PlaceColumns {
  readonly queue: unknown;
  readonly queue_priority: unknown;
  readonly queue_key: unknown;
  readonly queue_concurrency: unknown;
  readonly queue_per_key: unknown;
  readonly queue_rate_limit: unknown;
  readonly queue_rate_window: unknown;
}

/**
 * The values `upsertRun` writes for a run's place, in its columns' order
 * (queue … queue_rate_window, queued): a new run's step 0 gives them, `queued`
 * numbering it in the order step 0s were accepted. NULLs and 0 for a run on
 * no queue, and for a save of a run that exists (its head keeps what step 0 gave).
 */
export function placeValues(sql: Statements, place: QueuePlace | undefined): unknown[] {
  if (place === undefined) return [...Array(7).fill(null), 0];
  const { queue, priority, key, concurrency, perKey, rate } = place;
  const { queued } = sql.nextQueued.get() as { queued: number };
  return [
    queue,
    priority,
    key ?? null,
    concurrency ?? null,
    perKey ?? null,
    rate?.limit ?? null,
    rate?.windowMs ?? null,
    queued,
  ];
}

/**
 * The place the run's step 0 gave, read from its head; undefined for a run on
 * no queue (or unknown). `CheckpointStoreCorrupt` when the columns hold a
 * place no save writes: a take is never judged by limits the store cannot read.
 */
function storedPlace(sql: Statements, runId: string): QueuePlace | undefined {
  const row = sql.queuePlace.get(runId) as PlaceColumns | undefined;
  if (row === undefined || row.queue === null) return undefined;
  const optional = (value: unknown) => (value === null ? undefined : value);
  const limit = optional(row.queue_rate_limit);
  const windowMs = optional(row.queue_rate_window);
  const place = {
    queue: row.queue,
    priority: row.queue_priority,
    ...(row.queue_key === null ? {} : { key: row.queue_key }),
    ...(row.queue_concurrency === null ? {} : { concurrency: row.queue_concurrency }),
    ...(row.queue_per_key === null ? {} : { perKey: row.queue_per_key }),
    ...(limit === undefined && windowMs === undefined ? {} : { rate: { limit, windowMs } }),
  } as QueuePlace;
  try {
    checkQueuePlace(place);
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw error;
    throw new CheckpointStoreCorrupt(
      runId,
      `its stored head holds a queue place no save writes (${error.message.replace(/\.$/, "")}): the row was changed past the store, or written by a bug.`,
      { cause: error },
    );
  }
  return place;
}

/**
 * Refuses (`QueueFull`, from `queueRefusal`) a write that leaves the run
 * `run` (its head before the write; undefined for a new run, whose step 0
 * gives `given`) the lease `after`, when it is a take (`isTake`) of a queued
 * run beyond its queue's limits at `now`, the store's clock read by the same
 * transaction; `start` for a take at step 0 or 1 (`isStart`). Counts the
 * queue's other runs holding a slot, and for a start with a rate its starts
 * in the window; a start it allows is kept, and the starts the window left
 * behind are dropped. Reads nothing for a write that is no take; throws
 * before the caller writes anything.
 */
export function takeSlot(
  sql: Statements,
  runId: string,
  run: RunRow | undefined,
  given: QueuePlace | undefined,
  after: Lease | undefined,
  start: boolean,
  now: number,
): void {
  if (!isTake(heldLease(run), after, now)) return;
  const place = run === undefined ? given : storedPlace(sql, runId);
  if (place === undefined) return;
  const holders = sql.queueHolders.get({ queue: place.queue, runId, now, key: place.key ?? null }) as {
    held: number;
    heldByKey: number;
  };
  const windowStart = now - (place.rate?.windowMs ?? 0);
  const rated = start && place.rate !== undefined;
  const starts = rated
    ? (sql.queueStarts.get(place.queue, windowStart) as { starts: number; earliest: number | null })
    : { starts: 0, earliest: null };
  const counts = { ...holders, starts: starts.starts, earliestStart: starts.earliest ?? undefined };
  const refused = queueRefusal(runId, place, counts, start, now);
  if (refused !== undefined) throw refused;
  if (!rated) return;
  sql.pruneStarts.run(place.queue, windowStart);
  sql.insertStart.run(place.queue, now);
}

/** A row of `listQueued`: the run, and where the next keyset page starts. */
export interface QueuedRow {
  readonly run_id: string;
  readonly name: string;
  readonly key: string | null;
  readonly step: number;
  readonly priority: number;
  readonly queued: number;
}

/** Above every priority a place may hold: the first page is the range below it. */
const ABOVE_EVERY_PRIORITY = 2 ** 31;

/**
 * One page of `listQueued(queue)`: up to `limit` claimable runs of the queue
 * after `last` (the previous page's last row) in the queue's order, highest
 * priority first, then by `queued`. The rest of `last`'s priority, then the
 * lower priorities: each a range of the queued index, so no page reads
 * again what the pages before it read, however far into the queue it is.
 */
export function queuedPage(sql: Statements, queue: string, last: QueuedRow | undefined, limit: number): QueuedRow[] {
  const same =
    last === undefined
      ? []
      : (sql.queuedSamePriority.all({ queue, priority: last.priority, queued: last.queued, limit }) as QueuedRow[]);
  if (same.length >= limit) return same;
  const priority = last?.priority ?? ABOVE_EVERY_PRIORITY;
  const lower = sql.queuedLowerPriority.all({ queue, priority, limit: limit - same.length }) as QueuedRow[];
  return [...same, ...lower];
}
