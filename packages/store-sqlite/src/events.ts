import { CheckpointNotFound, eventRefusal, WAITING } from "@durable/core/store";
import { readHead, type Statements } from "./statements.js";

/** An event as `sendEvent` takes it, checked (`checkEvent`). */
export interface EventWrite {
  readonly seq: number;
  readonly key: string;
  readonly sealed: string;
}

/**
 * Appends one event to the run's inbox (`CheckpointStore.sendEvent`), inside
 * its savepoint of a `BEGIN IMMEDIATE` transaction (`GroupCommit`), so no
 * other sender or save comes between the read and the write. Judged by the
 * protocol's rules (`eventRefusal`) over the head row, which counts the
 * inbox's events, and the unique index on the keys; then the row is
 * inserted, and the head's count raised by the statement that also releases
 * a lease held by `WAITING`: the woken run is claimable in the same commit
 * that holds its event. False for a resend, writing nothing.
 */
export function appendEvent(sql: Statements, runId: string, event: EventWrite): boolean {
  const run = readHead(sql, runId);
  const { seq, key, sealed } = event;
  const hasKey = sql.eventKey.get(runId, key) !== undefined;
  const refused = eventRefusal(runId, seq, run, run?.events ?? 0, hasKey);
  if (refused === "duplicate") return false;
  if (refused !== undefined || run === undefined) throw refused ?? new CheckpointNotFound(runId);
  sql.insertEvent.run(runId, seq, key, sealed);
  const wakes = run.lease_owner === WAITING;
  sql.setEvents.run(run.events + 1, wakes ? null : run.lease_owner, wakes ? null : run.lease_expires, runId);
  return true;
}
