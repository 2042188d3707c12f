import { commitRefusal, isStart, type RunWrite } from "@durable/core/store";
import { placeValues, takeSlot } from "./queues.js";
import { heldLease, readHead, type Statements } from "./statements.js";

type SaveWrite = Extract<RunWrite, { kind: "save" }>;

/**
 * Applies a batch the caller checked (`checkBatch`), inside its savepoint of
 * a `BEGIN IMMEDIATE` transaction (`GroupCommit`): reads the run's head once,
 * judges every write by the protocol's rules (`commitRefusal`), and a take of
 * a queued run by its queue's limits (`takeSlot`), before writing any, then
 * inserts the rows and writes the head once (a new run's with its queue
 * place). `save` and `recordCall` are batches of one, so the rules have one path. A refusal is
 * thrown before anything is written; the savepoint rolls back whatever a
 * failing statement left.
 */
export function commitWrites(sql: Statements, runId: string, writes: readonly RunWrite[]): void {
  const run = readHead(sql, runId);
  const save = writes.find((write): write is SaveWrite => write.kind === "save");
  // Only a checkpoint's lease rule reads the clock (`commitRefusal` ignores `now` without one): a batch of records
  // runs no more statements than recordCall did.
  const now = save === undefined ? 0 : (sql.now.get() as { now: number }).now;
  // `runs` counts the records of the run's current segment only; a segment a claim raises to holds none yet.
  const stored = (segment: number) => (run !== undefined && run.segment === segment ? run.segment_calls : 0);
  // The inbox's count is on the head read above: a wait's save that missed an event takes no lease, at no extra read.
  const verdict = commitRefusal(runId, writes, run, stored, heldLease(run), now, run?.events);
  if ("refused" in verdict) throw verdict.refused;
  // A save that takes the run counts its queue's holders in this transaction: no other writer comes between.
  if (save !== undefined) takeSlot(sql, runId, run, save.row.queue, verdict.lease, isStart(save.step), now);

  // Accepted: the segment the run ends in (a record-only batch needs a run, so `run` is there without a save).
  const segment = save?.row.segment ?? run?.segment ?? 0;
  let calls = stored(segment);
  for (const write of writes) {
    if (write.kind === "record") {
      sql.insertCall.run(runId, write.segment, write.seq, write.sealed);
      if (write.segment === segment) calls += 1;
    } else {
      const { status, name: flow, kind, sealed } = write.row;
      sql.insertCheckpoint.run(runId, write.step, status, write.row.segment, flow, kind, sealed);
    }
  }
  if (save === undefined) {
    sql.setCalls.run(calls, runId);
    return;
  }
  const { status, name: flow, kind } = save.row;
  const { lease } = verdict;
  sql.upsertRun.run(
    runId,
    flow,
    kind,
    save.step,
    status,
    segment,
    calls,
    lease?.owner ?? null,
    lease?.expiresAt ?? null,
    save.row.waitsForDecision === true ? 1 : 0,
    ...placeValues(sql, run === undefined ? save.row.queue : undefined),
  );
}
