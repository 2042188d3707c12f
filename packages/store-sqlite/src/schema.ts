import type Database from "better-sqlite3";
import { ASLEEP, InvalidInput, UNFINISHED, WAITING } from "@durable/core/store";

/** The schema version this code writes. */
export const SCHEMA_VERSION = 7;

/** The statuses of a run that goes on, as an SQL list: ('running', 'paused'). */
export const UNFINISHED_IN: string = `(${UNFINISHED.map((status) => `'${status}'`).join(", ")})`;

/**
 * What a run a worker may claim is: running and not waiting for a decision.
 * The claimable index's condition up to version 5, and the queued index's
 * with the queue: a query must repeat it to use them.
 */
export const CLAIMABLE_RUN = "status = 'running' AND waits_for_decision = 0";

/**
 * A claimable run on no queue (numbered 0 in the queues' order): what
 * `listUnfinished(flow, { claimable })` lists (from version 6, queued runs
 * are `listQueued`'s). The claimable index's condition from then on. SQLite
 * takes the columns that an index's condition fixes by equalities from the
 * condition, not the table, only down the right of its ANDs: nested so, the
 * listing reads the index alone.
 */
export const CLAIMABLE_UNQUEUED = "status = 'running' AND (waits_for_decision = 0 AND queued = 0)";

/**
 * A queued run that may hold a slot of its queue: running, its lease a
 * drive's (not a sleep's or a wait's; released is NULL, so never). The
 * holders index's condition; whether the lease is live is its range.
 */
export const QUEUE_HOLDER: string = `queue IS NOT NULL AND status = 'running' AND lease_owner NOT IN ('${ASLEEP}', '${WAITING}')`;

/** Marks the tables as ours, so a database holding another application's tables of the same names is refused. */
const OWNER = "@durable/store-sqlite";

/** Table names for one prefix. */
export interface Tables {
  readonly meta: string;
  readonly runs: string;
  readonly checkpoints: string;
  readonly calls: string;
  readonly events: string;
  readonly queueStarts: string;
  readonly streams: string;
}

export function tablesFor(prefix: string): Tables {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,47}$/.test(prefix)) {
    throw new InvalidInput(
      `tablePrefix ${JSON.stringify(prefix)} must be letters, digits and _ (not first a digit), at most 48 characters.`,
    );
  }
  return {
    meta: `${prefix}meta`,
    runs: `${prefix}runs`,
    checkpoints: `${prefix}checkpoints`,
    calls: `${prefix}calls`,
    events: `${prefix}events`,
    queueStarts: `${prefix}queue_starts`,
    streams: `${prefix}streams`,
  };
}

/**
 * Each migration takes the schema from the version before it to its own.
 * `runs` holds one row per run (its latest step, status, segment, how many
 * records its current segment has and, from version 5, how many events its
 * inbox holds; from version 6, its queue place) so compare-and-set reads one row.
 * Exported for tests that build a database of an older version.
 */
export const MIGRATIONS: ReadonlyArray<(t: Tables) => string> = [
  (t) => `
    CREATE TABLE ${t.runs} (
      run_id TEXT PRIMARY KEY NOT NULL,
      flow TEXT NOT NULL,
      kind TEXT NOT NULL,
      step INTEGER NOT NULL,
      status TEXT NOT NULL,
      segment INTEGER NOT NULL,
      segment_calls INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX ${t.runs}_unfinished ON ${t.runs} (flow, run_id) WHERE status IN ${UNFINISHED_IN};
    CREATE TABLE ${t.checkpoints} (
      run_id TEXT NOT NULL,
      step INTEGER NOT NULL,
      status TEXT NOT NULL,
      segment INTEGER NOT NULL,
      flow TEXT NOT NULL,
      kind TEXT NOT NULL,
      sealed TEXT NOT NULL,
      PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID;
    CREATE TABLE ${t.calls} (
      run_id TEXT NOT NULL,
      segment INTEGER NOT NULL,
      seq INTEGER NOT NULL,
      sealed TEXT NOT NULL,
      PRIMARY KEY (run_id, segment, seq)
    ) WITHOUT ROWID;`,
  // Version 2, leases: the holder and expiry (ms by SQLite's clock) beside the head, NULL when released,
  // so existing runs start claimable; claimable runs of a flow are one range of this index.
  (t) => `
    ALTER TABLE ${t.runs} ADD COLUMN lease_owner TEXT;
    ALTER TABLE ${t.runs} ADD COLUMN lease_expires INTEGER;
    CREATE INDEX ${t.runs}_claimable ON ${t.runs} (flow, lease_expires, run_id) WHERE status = 'running';`,
  // Version 3, the inspection capability: when each run's latest checkpoint was saved (ms by SQLite's clock, 0 for
  // runs saved before), newest first over every run, one flow's, or one status's: each a range of one index.
  (t) => `
    ALTER TABLE ${t.runs} ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX ${t.runs}_recent ON ${t.runs} (updated_at DESC, run_id DESC);
    CREATE INDEX ${t.runs}_flow_recent ON ${t.runs} (flow, updated_at DESC, run_id DESC);
    CREATE INDEX ${t.runs}_status_recent ON ${t.runs} (status, updated_at DESC, run_id DESC);`,
  // Version 4: runs waiting for a decision (1) are left out of the claimable index, so a claimable listing never
  // reads them; runs saved before are 0, as they were: listed until a recovery saves them waiting.
  (t) => `
    ALTER TABLE ${t.runs} ADD COLUMN waits_for_decision INTEGER NOT NULL DEFAULT 0;
    DROP INDEX ${t.runs}_claimable;
    CREATE INDEX ${t.runs}_claimable ON ${t.runs} (flow, lease_expires, run_id) WHERE ${CLAIMABLE_RUN};`,
  // Version 5, the events capability: each run's inbox, by seq, each key once; the head counts its events, so a
  // send or a wait's save reads the inbox's length with the head, never by counting rows. Runs saved before have none.
  (t) => `
    ALTER TABLE ${t.runs} ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE ${t.events} (
      run_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      key TEXT NOT NULL,
      sealed TEXT NOT NULL,
      PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX ${t.events}_key ON ${t.events} (run_id, key);`,
  // Version 6, the queues capability: a queued run's place and its queue's limits as its step 0 gave them, kept on
  // its head for its life (NULL: on no queue, as every run saved before), and `queued`, the order in which step 0s
  // were accepted, from a counter in the meta table (0: on no queue). The claimable index leaves queued runs out; a
  // queue's claimable runs are ranges of `queued` in the queue's order, and its runs holding a slot a range of
  // `holders` by lease expiry. A queue's starts within its rate window are rows of their own, by (queue, at).
  (t) => `
    ALTER TABLE ${t.runs} ADD COLUMN queue TEXT;
    ALTER TABLE ${t.runs} ADD COLUMN queue_priority INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN queue_key TEXT;
    ALTER TABLE ${t.runs} ADD COLUMN queue_concurrency INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN queue_per_key INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN queue_rate_limit INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN queue_rate_window INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
    DROP INDEX ${t.runs}_claimable;
    CREATE INDEX ${t.runs}_claimable ON ${t.runs} (flow, lease_expires, run_id) WHERE ${CLAIMABLE_UNQUEUED};
    CREATE INDEX ${t.runs}_queued ON ${t.runs} (queue, queue_priority DESC, queued) WHERE queue IS NOT NULL AND ${CLAIMABLE_RUN};
    CREATE INDEX ${t.runs}_holders ON ${t.runs} (queue, lease_expires) WHERE ${QUEUE_HOLDER};
    CREATE TABLE ${t.queueStarts} (queue TEXT NOT NULL, at INTEGER NOT NULL);
    CREATE INDEX ${t.queueStarts}_at ON ${t.queueStarts} (queue, at);
    INSERT INTO ${t.meta} (key, value) VALUES ('queued', '0');`,
  // Version 7, the streams capability: each run's stream, one row per batch keyed by (run_id, offset), so an append
  // finds where the stream ends and a read from any part finds its batch by a range of the key. "offset" is quoted:
  // it is a keyword. Runs saved before have no stream.
  (t) => `
    CREATE TABLE ${t.streams} (
      run_id TEXT NOT NULL,
      "offset" INTEGER NOT NULL,
      count INTEGER NOT NULL,
      segment INTEGER NOT NULL,
      sealed TEXT NOT NULL,
      PRIMARY KEY (run_id, "offset")
    ) WITHOUT ROWID;`,
];

/**
 * The version that creates each table: a table of that name already in a
 * file of an older version (none at all before the meta table) is another
 * application's, refused before a migration would fail on it.
 */
const CREATED_IN: ReadonlyArray<readonly [keyof Tables, number]> = [
  ["runs", 1],
  ["checkpoints", 1],
  ["calls", 1],
  ["events", 5],
  ["queueStarts", 6],
  ["streams", 7],
];

/**
 * Brings the database to `SCHEMA_VERSION` in one `BEGIN IMMEDIATE`
 * transaction, so two processes opening a new file at once both succeed and
 * the schema is made once. A newer schema, or tables of these names that are
 * not ours, are refused with `InvalidInput`.
 */
export function migrate(db: Database.Database, t: Tables, where: string): void {
  db.transaction(() => {
    const exists = (name: string) =>
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
    let version = 0;
    const ours = exists(t.meta);
    if (ours) {
      const rows = db.prepare(`SELECT key, value FROM ${t.meta}`).all() as Array<{ key: string; value: string }>;
      const meta = new Map(rows.map((r) => [r.key, r.value]));
      if (meta.get("owner") !== OWNER) throw foreign(where, t.meta);
      version = Number(meta.get("schema_version"));
    }
    if (!Number.isSafeInteger(version) || version > SCHEMA_VERSION) {
      throw new InvalidInput(
        `${where} has schema version ${version}, newer than this @durable/store-sqlite knows (${SCHEMA_VERSION}); upgrade the package.`,
      );
    }
    for (const [table, since] of CREATED_IN) if (since > version && exists(t[table])) throw foreign(where, t[table]);
    if (!ours) {
      db.exec(`CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`);
      db.prepare(`INSERT INTO ${t.meta} (key, value) VALUES ('owner', ?), ('schema_version', '0')`).run(OWNER);
    }
    for (const migrate of MIGRATIONS.slice(version, SCHEMA_VERSION)) db.exec(migrate(t));
    db.prepare(`UPDATE ${t.meta} SET value = ? WHERE key = 'schema_version'`).run(String(SCHEMA_VERSION));
  }).immediate();
}

function foreign(where: string, table: string): InvalidInput {
  return new InvalidInput(
    `${where} already holds a table ${table} that @durable did not make; use another file or another tablePrefix.`,
  );
}
