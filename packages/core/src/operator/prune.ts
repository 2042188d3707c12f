import { CheckpointNotFound, InvalidInput } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { STORAGE_OPTIONS, runStorage, type StorageOptions } from "../run/storage.js";
import { readLatest } from "../seal/chain.js";
import { openCheckpoint } from "../seal/checkpoint.js";
import { readEnvelope } from "../run/envelope.js";
import type { CheckpointKeys } from "../seal/sealer.js";
import { isEnded } from "../store/contract.js";
import { MAX_RUN_PAGE, runCursor } from "../store/listing.js";
import { streamStore, type StreamStore } from "../log/stream-read.js";
import type { Sealer } from "../seal/sealer.js";

/** What `pruneRuns` deletes, and where. */
export interface PruneOptions extends StorageOptions {
  readonly checkpointKey: CheckpointKeys;
  /** Ended runs last saved before this time (by the store's clock) are deleted. */
  readonly olderThan: Date | number;
  /** Only runs of this name (a flow's or a tool loop's). */
  readonly name?: string;
  /** At most this many runs a call (1 to 500, default 100): one page of the store's listing. */
  readonly limit?: number;
  /**
   * Drops only the runs' streams (`dropStream`), keeping their checkpoints and
   * records: a stream kept for a while after its run ended, for clients that
   * rejoin late, then dropped before the run itself is. A failed run that a
   * retry may take up (one not cancelled) keeps its stream: the retry's claim
   * must find every part its checkpoints counted. Needs a store with streams.
   */
  readonly streamsOnly?: boolean;
  /** Where this call's page starts: the `next` of the call before, when streams only are dropped (the runs stay listed). */
  readonly cursor?: string;
}

const PRUNE_OPTIONS: OptionTable<PruneOptions> = {
  ...STORAGE_OPTIONS,
  olderThan: true,
  name: "string",
  limit: true,
  streamsOnly: "boolean",
  cursor: "string",
};

/**
 * What one call of `pruneRuns` did: the runs it deleted (or whose streams it
 * dropped), whether older ended runs remain for another call, and where that
 * call starts (`cursor`).
 */
export interface PruneResult {
  readonly pruned: readonly string[];
  readonly more: boolean;
  readonly next?: string;
}

/**
 * Deletes ended runs (`done`, `failed`) last saved before `olderThan`, every
 * checkpoint and call record of each, in one bounded batch: one page of the
 * store's listing (`listRuns`, read from the place of `olderThan` on, so the
 * newer runs are never read), up to `limit` runs. Call it again while `more`
 * (a retention job on a timer). Each run's latest checkpoint is opened with
 * the key first: a run whose sealed status is not ended is left alone, however
 * the store's index lists it. With `anchor`, the anchor forgets each deleted
 * run, so it reads as unknown (`CheckpointNotFound`), never as corrupt.
 * Needs a store with the inspection capability (`listRuns`).
 */
export async function pruneRuns(options: PruneOptions): Promise<PruneResult> {
  const where = "pruneRuns";
  checkOptions(where, options, PRUNE_OPTIONS);
  const before = options.olderThan instanceof Date ? options.olderThan.getTime() : options.olderThan;
  if (!Number.isSafeInteger(before) || before < 0)
    throw new InvalidInput(`${where}: olderThan must be a Date or ms since the epoch.`);
  const limit = options.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RUN_PAGE)
    throw new InvalidInput(`${where}: limit must be a whole number from 1 to ${MAX_RUN_PAGE}.`);
  const { store, sealer } = runStorage(where, options);
  const streams = options.streamsOnly === true ? streamStore(where, store) : undefined;
  if (store.listRuns === undefined)
    throw new InvalidInput(`${where}: the store has no listRuns (the inspection capability): it cannot find old runs.`);
  const page = await store.listRuns({
    status: ["done", "failed"],
    ...(options.name === undefined ? {} : { name: options.name }),
    limit,
    // Strictly after this place in newest-first order: every run saved before `olderThan`.
    cursor: options.cursor ?? runCursor({ updatedAt: before, runId: "" }),
  });
  const pruned: string[] = [];
  for (const run of page.runs) {
    let failed: boolean;
    try {
      const latest = openCheckpoint(sealer, await store.latest(run.runId));
      if (!isEnded(latest.status)) continue;
      failed = latest.status === "failed";
    } catch (error) {
      if (error instanceof CheckpointNotFound) continue;
      throw error;
    }
    if (streams === undefined) await store.delete(run.runId);
    else if (!(await dropEndedStream(streams, sealer, run.runId, failed))) continue;
    pruned.push(run.runId);
  }
  return { pruned, more: page.next !== undefined, ...(page.next === undefined ? {} : { next: page.next }) };
}

/**
 * Drops the stream of an ended run that cannot go on (done, or cancelled):
 * false for a failed run a retry may take up, whose claim would find fewer
 * parts than its checkpoints counted (`CheckpointStoreCorrupt`) if it were gone.
 */
async function dropEndedStream(store: StreamStore, sealer: Sealer, runId: string, failed: boolean): Promise<boolean> {
  // A failed run's envelope says whether it was cancelled: read whole, through the chain.
  if (failed && readEnvelope(runId, (await readLatest(store, sealer, runId)).data).cancelled !== true) return false;
  await store.dropStream(runId);
  return true;
}
