import { InvalidInput } from "../base/errors.js";
import type { RunPage, RunQuery, RunStatus, RunSummary } from "./contract.js";

/*
 * The optional inspection capability of a store (`listRuns` and `history`):
 * what a console reads to show runs of every status, newest first. The rules
 * every store follows are here, so each store pages and filters the same way.
 */

/** The most runs one page holds. */
export const MAX_RUN_PAGE = 500;

/** Where a page starts: after this run in the listing's order. */
export interface RunPosition {
  readonly updatedAt: number;
  readonly runId: string;
}

/** A checked `RunQuery`, as a store reads it. */
export interface ResolvedRunQuery {
  readonly status: readonly RunStatus[] | undefined;
  readonly name: string | undefined;
  readonly runIdPrefix: string | undefined;
  readonly limit: number;
  /** Runs strictly after this one (older, or as old with a lower id); undefined from the start. */
  readonly after: RunPosition | undefined;
}

const STATUSES: ReadonlySet<string> = new Set(["running", "paused", "done", "failed"]);

/** Checks a query before a store reads anything: `InvalidInput` naming what is wrong. */
export function checkRunQuery(query: RunQuery = {}): ResolvedRunQuery {
  if (typeof query !== "object" || query === null) throw new InvalidInput("listRuns: the query must be an object.");
  const { status, name, runIdPrefix, limit = 50, cursor } = query;
  if (status !== undefined && (!Array.isArray(status) || !status.every((s) => STATUSES.has(s))))
    throw new InvalidInput('listRuns: status must be a list of "running", "paused", "done" and "failed".');
  if (name !== undefined && (typeof name !== "string" || name.length === 0 || name.length > 128))
    throw new InvalidInput("listRuns: name must be a run name of 1 to 128 characters.");
  if (runIdPrefix !== undefined && (typeof runIdPrefix !== "string" || runIdPrefix.length > 256))
    throw new InvalidInput("listRuns: runIdPrefix must be a string of at most 256 characters.");
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RUN_PAGE)
    throw new InvalidInput(`listRuns: limit must be a whole number from 1 to ${MAX_RUN_PAGE}, not ${String(limit)}.`);
  return {
    status: status === undefined || status.length === 0 ? undefined : [...new Set(status)],
    name,
    runIdPrefix: runIdPrefix === "" ? undefined : runIdPrefix,
    limit,
    after: cursor === undefined ? undefined : readRunCursor(cursor),
  };
}

/** The cursor of the page after `last`: opaque to callers, base64url of its time and id. */
export function runCursor(last: RunPosition): string {
  return Buffer.from(JSON.stringify([last.updatedAt, last.runId]), "utf8").toString("base64url");
}

/** Reads a cursor `runCursor` made; anything else is `InvalidInput`. */
function readRunCursor(cursor: unknown): RunPosition {
  let parsed: unknown;
  try {
    parsed = typeof cursor === "string" ? JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) : undefined;
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    !Number.isSafeInteger(parsed[0]) ||
    typeof parsed[1] !== "string"
  )
    throw new InvalidInput("listRuns: cursor is not one a page of runs gave; start again without it.");
  return { updatedAt: parsed[0], runId: parsed[1] };
}

/**
 * Orders runs newest first, then by run id from the highest by its UTF-8
 * bytes (code point order: what SQLite's BINARY, PostgreSQL's "C" collation
 * and Redis compare), so each run has one place in every store.
 */
export function newestFirst(a: RunPosition, b: RunPosition): number {
  if (a.updatedAt !== b.updatedAt) return b.updatedAt - a.updatedAt;
  return Buffer.compare(Buffer.from(b.runId, "utf8"), Buffer.from(a.runId, "utf8"));
}

/** True when `run` passes every filter of `query` and comes after its cursor. */
export function matchesRunQuery(query: ResolvedRunQuery, run: RunSummary): boolean {
  return (
    (query.status === undefined || query.status.includes(run.status)) &&
    (query.name === undefined || run.name === query.name) &&
    (query.runIdPrefix === undefined || run.runId.startsWith(query.runIdPrefix)) &&
    (query.after === undefined || newestFirst(query.after, run) < 0)
  );
}

/**
 * A page out of runs in the listing's order, each already matching the
 * query, of which there may be one more than the page holds: that one says
 * there is a next page.
 */
export function runPage(query: ResolvedRunQuery, ordered: readonly RunSummary[]): RunPage {
  const runs = ordered.slice(0, query.limit);
  const last = runs.at(-1);
  return ordered.length > query.limit && last !== undefined ? { runs, next: runCursor(last) } : { runs };
}
