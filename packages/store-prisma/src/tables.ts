import { createHash } from "node:crypto";
import { InvalidInput } from "@durable/core/store";

/** The databases the store speaks to. */
export type Provider = "postgresql" | "sqlite";

/** Where the store's tables are and how its SQL is written for one database. */
export interface Tables {
  readonly provider: Provider;
  /** The quoted names of the store's tables. */
  readonly tables: {
    readonly runs: string;
    readonly checkpoints: string;
    readonly calls: string;
    readonly events: string;
    readonly queueStarts: string;
    readonly streams: string;
    readonly migrations: string;
  };
  /** PostgreSQL: the schema of the tables; SQLite: `main`. */
  readonly schema: string;
  readonly prefix: string;
  /** The SQL with `?` placeholders, as the dialect numbers them. */
  sql(query: string): string;
  /**
   * The store's clock in SQL: the database's time, in whole ms since the
   * epoch, read when the statement runs (never the worker's clock, which may drift).
   */
  readonly now: string;
  /** A 32-bit key for PostgreSQL's advisory lock over this schema and prefix. */
  readonly lockKey: number;
}

// clock_timestamp(), not now(): now() is the time the transaction started.
const POSTGRES_NOW = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";
// Rounded: the seconds are a double, and ms × 1000 may land a hair below the whole number.
const SQLITE_NOW = "CAST(round(unixepoch('subsec') * 1000) AS INTEGER)";

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

function checkName(option: string, value: string): string {
  if (!NAME.test(value))
    throw new InvalidInput(`${option} ${JSON.stringify(value)} must be letters, digits and _ (not first a digit).`);
  return value;
}

/** The names of the tables of one provider, schema and prefix; throws `InvalidInput` for a name that is not plain. */
export function tablesOf(
  provider: Provider,
  options: { readonly schema?: string | undefined; readonly tablePrefix?: string | undefined },
): Tables {
  const prefix = checkName("tablePrefix", options.tablePrefix ?? "durable_");
  if (provider === "sqlite" && options.schema !== undefined) {
    throw new InvalidInput("schema is for PostgreSQL; give SQLite tenants a tablePrefix or a file each.");
  }
  const schema = provider === "postgresql" ? checkName("schema", options.schema ?? "public") : undefined;
  const table = (name: string) => (schema === undefined ? `"${prefix}${name}"` : `"${schema}"."${prefix}${name}"`);
  return {
    provider,
    tables: {
      runs: table("runs"),
      checkpoints: table("checkpoints"),
      calls: table("calls"),
      events: table("events"),
      queueStarts: table("queue_starts"),
      streams: table("streams"),
      migrations: table("migrations"),
    },
    schema: schema ?? "main",
    prefix,
    sql:
      provider === "postgresql"
        ? (query) => {
            let n = 0;
            return query.replace(/\?/g, () => `$${++n}`);
          }
        : (query) => query,
    now: provider === "postgresql" ? POSTGRES_NOW : SQLITE_NOW,
    lockKey: schema === undefined ? 0 : createHash("sha1").update(`${schema}.${prefix}`).digest().readInt32BE(0),
  };
}
