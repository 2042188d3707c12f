import type Database from "better-sqlite3";
import {
  type CheckpointColumns,
  checkedCheckpoint,
  checkRunQuery,
  type ResolvedRunQuery,
  type RunKind,
  type RunPage,
  type RunQuery,
  type RunStatus,
  runPage,
  type StoredCheckpoint,
} from "@durable/core/store";
import type { Tables } from "./schema.js";

/** A head row as the listing reads it. */
interface ListedRun {
  readonly run_id: string;
  readonly flow: string;
  readonly kind: RunKind;
  readonly step: number;
  readonly status: RunStatus;
  readonly segment: number;
  readonly updated_at: number;
  readonly lease_owner: string | null;
  readonly lease_expires: number | null;
}

/**
 * A page of runs, newest first (`CheckpointStore.listRuns`): one keyset query
 * over the `recent` index, or its flow's or status's, past the cursor; one
 * row more than the page says whether another follows.
 */
export function listRuns(db: Database.Database, t: Tables, query: RunQuery | undefined): RunPage {
  const q = checkRunQuery(query);
  const { sql, params } = listingSql(t, q);
  const rows = db.prepare(sql).all(...params) as ListedRun[];
  return runPage(
    q,
    rows.map((row) => ({
      runId: row.run_id,
      name: row.flow,
      kind: row.kind,
      step: row.step,
      status: row.status,
      segment: row.segment,
      updatedAt: row.updated_at,
      ...(row.lease_owner === null || row.lease_expires === null
        ? {}
        : { lease: { owner: row.lease_owner, expiresAt: row.lease_expires } }),
    })),
  );
}

/** The keyset query of a page and its parameters; tests explain its plan. */
export function listingSql(t: Tables, q: ResolvedRunQuery): { sql: string; params: Array<string | number> } {
  const where: string[] = [];
  const params: Array<string | number> = [];
  if (q.name !== undefined) {
    where.push("flow = ?");
    params.push(q.name);
  }
  if (q.status !== undefined) {
    where.push(`status IN (${q.status.map(() => "?").join(", ")})`);
    params.push(...q.status);
  }
  if (q.runIdPrefix !== undefined) {
    where.push("substr(run_id, 1, length(?)) = ?");
    params.push(q.runIdPrefix, q.runIdPrefix);
  }
  if (q.after !== undefined) {
    where.push("(updated_at, run_id) < (?, ?)");
    params.push(q.after.updatedAt, q.after.runId);
  }
  return {
    sql: `SELECT run_id, flow, kind, step, status, segment, updated_at, lease_owner, lease_expires FROM ${t.runs}
       ${where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`}
       ORDER BY updated_at DESC, run_id DESC LIMIT ?`,
    params: [...params, q.limit + 1],
  };
}

/** Every checkpoint of the run from step `from`, by step (`CheckpointStore.history`). */
export function history(db: Database.Database, t: Tables, runId: string, from: number): StoredCheckpoint[] {
  const rows = db
    .prepare(
      `SELECT run_id AS runId, step, status, segment, flow AS name, kind, sealed FROM ${t.checkpoints} WHERE run_id = ? AND step >= ? ORDER BY step`,
    )
    .all(runId, from) as CheckpointColumns[];
  return rows.map((row) => checkedCheckpoint(runId, row));
}
