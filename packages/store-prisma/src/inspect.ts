import { checkRunQuery, type RunKind, type RunPage, type RunQuery, type RunStatus, runPage } from "@durable/core/store";
import { type LeaseColumns, leaseFrom } from "./locked-run.js";
import type { Tables } from "./tables.js";

/** A head row as the listing reads it. */
interface ListedRun extends LeaseColumns {
  readonly run_id: string;
  readonly flow: string;
  readonly kind: RunKind;
  readonly step: number | bigint;
  readonly status: RunStatus;
  readonly segment: number | bigint;
  readonly updated_at: number | bigint;
}

/** A listing query and its values. */
export interface Listing {
  readonly query: string;
  readonly values: Array<string | number>;
  /** Reads the rows it returned into a page. */
  page(rows: readonly ListedRun[]): RunPage;
}

/**
 * The keyset query of a page of runs, newest first (`CheckpointStore.listRuns`):
 * one range of the `recent` index, or its flow's or status's, past the cursor,
 * one row more than the page to say whether another follows. Run ids compare
 * by their bytes (PostgreSQL's "C" collation), as in every store.
 */
export function runListing(db: Tables, query: RunQuery | undefined): Listing {
  const q = checkRunQuery(query);
  const runId = db.provider === "postgresql" ? `"run_id" COLLATE "C"` : `"run_id"`;
  const where: string[] = [];
  const values: Array<string | number> = [];
  if (q.name !== undefined) {
    where.push(`"flow" = ?`);
    values.push(q.name);
  }
  if (q.status !== undefined) {
    where.push(`"status" IN (${q.status.map(() => "?").join(", ")})`);
    values.push(...q.status);
  }
  if (q.runIdPrefix !== undefined) {
    where.push(`substr("run_id", 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT)`);
    values.push(q.runIdPrefix, q.runIdPrefix);
  }
  if (q.after !== undefined) {
    where.push(
      `("updated_at" < CAST(? AS BIGINT) OR ("updated_at" = CAST(? AS BIGINT) AND ${runId} < CAST(? AS TEXT)))`,
    );
    values.push(q.after.updatedAt, q.after.updatedAt, q.after.runId);
  }
  return {
    query: `SELECT "run_id", "flow", "kind", "step", "status", "segment", "updated_at", "lease_owner", "lease_expires_at"
      FROM ${db.tables.runs} ${where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`}
      ORDER BY "updated_at" DESC, ${runId} DESC LIMIT ${q.limit + 1}`,
    values,
    page: (rows) =>
      runPage(
        q,
        rows.map((row) => {
          const lease = leaseFrom(row);
          return {
            runId: row.run_id,
            name: row.flow,
            kind: row.kind,
            step: Number(row.step),
            status: row.status,
            segment: Number(row.segment),
            updatedAt: Number(row.updated_at),
            ...(lease === undefined ? {} : { lease }),
          };
        }),
      ),
  };
}
