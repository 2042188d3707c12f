import { CheckpointConflict, type DurableError, type Lease, type LeaseTerms, renewRefusal } from "@durable/core/store";
import type { Sql } from "./client.js";
import type { KnownRuns } from "./known-runs.js";
import { leaseValues, lockRun } from "./locked-run.js";
import { asksQueue, lockQueue, queueCheck, readPlace, takeRefusal } from "./queues.js";
import type { Tables } from "./tables.js";

/**
 * Extends the lease of `runId` to the store's clock + `terms.ms` in the
 * transaction `tx` (see `CheckpointStore.renew`), under the run's lock. A
 * renewal of a lease that ran out is a take of a queued run's slot: on
 * PostgreSQL the queue's lock is taken first (the run's place, known or
 * read: it never changes), as every take of the queue takes it, and the
 * queue's limits are counted (`takeRefusal`). Returns the lease, or the
 * refusal (nothing written).
 */
export async function renewLease(
  db: Tables,
  known: KnownRuns,
  tx: Sql,
  runId: string,
  segment: number,
  terms: LeaseTerms,
): Promise<Lease | DurableError> {
  const seen = known.get(runId);
  const locked =
    db.provider !== "postgresql" ? undefined : seen === undefined ? await readPlace(db, tx, runId) : seen.head.queue;
  if (locked !== undefined && asksQueue(locked, false)) await lockQueue(db, tx, locked.queue);
  const run = await lockRun(db, tx, runId);
  const refused = renewRefusal(runId, segment, terms.owner, run.head, run.lease);
  if (refused !== undefined) return refused;
  const check = queueCheck(run.head?.queue, run.lease, terms.owner, -1, run.now);
  if (check?.kind === "take") {
    // A run's place is its step 0's: another only for a run deleted and made again since it was read.
    if (db.provider === "postgresql" && check.place.queue !== locked?.queue)
      return new CheckpointConflict(runId, "its queue changed while the store waited for the queue's lock.");
    // Never a start: no start to keep.
    const counted = await takeRefusal(db, tx, runId, check);
    if (typeof counted !== "number") return counted;
  }
  const lease = { owner: terms.owner, expiresAt: run.now + terms.ms };
  await tx.$executeRawUnsafe(
    db.sql(`UPDATE ${db.tables.runs} SET "lease_owner" = ?, "lease_expires_at" = ? WHERE "run_id" = ?`),
    ...leaseValues(lease),
    runId,
  );
  known.set(runId, run.head === undefined ? undefined : { head: run.head, lease });
  return lease;
}
