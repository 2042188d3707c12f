import { randomUUID } from "node:crypto";
import pg from "pg";
import { serverAnswers } from "./services.js";

/** The PostgreSQL server the tests share: `DATABASE_URL`, or the local one. */
export const DATABASE_URL = process.env["DATABASE_URL"] ?? "postgresql://postgres@127.0.0.1:5432/test";

/** Whether PostgreSQL answers at `DATABASE_URL`; in CI a missing server fails loudly, locally the tests are skipped. */
export function postgresAnswers(): Promise<boolean> {
  return serverAnswers(
    "PostgreSQL",
    DATABASE_URL,
    () => adminQuery(DATABASE_URL, "SELECT 1"),
    "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
  );
}

/** Runs one statement on a connection of its own to `url`, then closes it. */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A database of one's own on a server: made by `create`, dropped (with its open connections) by `drop`. */
export interface OwnDatabase {
  readonly name: string;
  readonly url: string;
  create(): Promise<void>;
  drop(): Promise<void>;
}

/** A new database name `<prefix>_<random>` on the server of `server` (by default `DATABASE_URL`). */
export function ownDatabase(prefix: string, server: string = DATABASE_URL): OwnDatabase {
  const name = `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    create: () => adminQuery(server, `CREATE DATABASE "${name}"`),
    drop: () => adminQuery(server, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
