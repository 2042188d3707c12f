import { isClaimable, type RunStatus, UNFINISHED } from "@durable/core/store";
import { type LeaseColumns, leaseFrom } from "./locked-run.js";
import type { Tables } from "./tables.js";

/** Statuses as an SQL list, e.g. ('running', 'paused'). */
export const sqlList = (statuses: readonly RunStatus[]): string =>
  `(${statuses.map((status) => `'${status}'`).join(", ")})`;

/** The statuses a worker may claim a run in, as the rule says of a run with no lease. */
const CLAIMABLE_IN = sqlList(UNFINISHED.filter((status) => isClaimable(status, undefined, 0)));

/**
 * Where a claimable listing stands. It walks the claimable index (flow,
 * status, waiting for a decision, queue, lease expiry, run id), past runs
 * that wait for a decision and queued runs (`listQueued` gives those), in
 * two ranges: first the released leases (NULL expiry) by run id, then the
 * leases that ran out by expiry and run id.
 * Every page reads a range of claimable rows only, however many leases are
 * live. The store's clock is read by the first page and kept: a run claimed
 * during the listing holds a lease that runs out after it, so no run is
 * listed twice.
 */
export interface ClaimableCursor {
  readonly range: "released" | "ran out";
  /** In the range of leases that ran out: the expiry of the last row listed. */
  readonly afterExpiry: number;
  readonly afterRun: string;
  /** The store's clock when the listing began; undefined until a page has read it. */
  readonly now: number | undefined;
}

/** The cursor of a listing's first page. */
export const FIRST_CLAIMABLE: ClaimableCursor = { range: "released", afterExpiry: -1, afterRun: "", now: undefined };

/** One page's rows as the database returns them. */
export interface ClaimableRow extends LeaseColumns {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly now: number | bigint;
}

/** The query of the page at `cursor` (at most `limit` rows) and its values. */
export function claimableQuery(
  db: Tables,
  flow: string,
  cursor: ClaimableCursor,
  limit: number,
): { query: string; values: unknown[] } {
  const released = cursor.range === "released";
  const range = released
    ? `"r"."lease_expires_at" IS NULL AND "r"."run_id" > ?`
    : `"r"."lease_expires_at" <= (SELECT "now" FROM "clock") AND ("r"."lease_expires_at", "r"."run_id") > (?, ?)`;
  const query = `WITH "clock" AS (SELECT COALESCE(CAST(? AS BIGINT), ${db.now}) AS "now")
    SELECT "r"."run_id", "r"."status", "r"."lease_owner", "r"."lease_expires_at", (SELECT "now" FROM "clock") AS "now"
    FROM ${db.tables.runs} AS "r"
    WHERE "r"."flow" = ? AND "r"."status" IN ${CLAIMABLE_IN} AND "r"."waits_for_decision" = 0 AND "r"."queue" = '' AND ${range}
    ORDER BY ${released ? "" : `"r"."lease_expires_at", `}"r"."run_id" LIMIT ${limit}`;
  const after = released ? [cursor.afterRun] : [cursor.afterExpiry, cursor.afterRun];
  return { query, values: [cursor.now ?? null, flow, ...after] };
}

/**
 * The ids of a page that the rule finds claimable (the index selected them;
 * the rule has the last word), and the cursor of the next page, or undefined
 * after the last.
 */
export function claimablePage(
  rows: readonly ClaimableRow[],
  cursor: ClaimableCursor,
  limit: number,
): { ids: string[]; next: ClaimableCursor | undefined } {
  const ids = rows.filter((row) => isClaimable(row.status, leaseFrom(row), Number(row.now))).map((row) => row.run_id);
  const read = rows[0];
  const now = cursor.now ?? (read === undefined ? undefined : Number(read.now));
  const last = rows.at(-1);
  if (rows.length === limit && last !== undefined) {
    const afterExpiry = cursor.range === "released" ? -1 : Number(last.lease_expires_at);
    return { ids, next: { range: cursor.range, afterExpiry, afterRun: last.run_id, now } };
  }
  // The released range is done: the leases that ran out follow, from their start, at the same clock.
  return { ids, next: cursor.range === "released" ? { ...FIRST_CLAIMABLE, range: "ran out", now } : undefined };
}
