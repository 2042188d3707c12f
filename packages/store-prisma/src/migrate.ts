import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { Client, Sql } from "./client.js";
import type { Provider, Tables } from "./tables.js";

/** One shipped migration: its folder name and its SQL. */
export interface Migration {
  readonly name: string;
  readonly sql: string;
}

/** The migrations shipped for a provider, in order (`migrations/<provider>/<name>/migration.sql`). */
export function shippedMigrations(provider: Provider): Migration[] {
  const root = new URL(`../migrations/${provider}/`, import.meta.url);
  return readdirSync(root)
    .sort()
    .map((name) => ({ name, sql: readFileSync(new URL(`${name}/migration.sql`, root), "utf8") }));
}

/**
 * Applies the shipped migrations that are not yet recorded, each recorded in
 * `<prefix>migrations` with the columns of Prisma's own migrations table. On
 * PostgreSQL it runs under an advisory lock of this schema and prefix, in one
 * transaction; on SQLite in one transaction that takes the write lock first.
 * Several processes migrating one database at once all succeed; the schema is
 * applied once. Returns the names it applied. `migrations` are the shipped
 * ones; a test passes the first few to make the database of an older version.
 */
export async function migrate(
  db: Tables,
  client: Client,
  migrations: readonly Migration[] = shippedMigrations(db.provider),
): Promise<string[]> {
  const run = () =>
    client.$transaction(
      async (tx) => {
        if (db.provider === "postgresql") {
          await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${db.lockKey})`);
          await tx.$executeRawUnsafe(`CREATE SCHEMA IF NOT EXISTS "${db.schema}"`);
        }
        await tx.$executeRawUnsafe(
          `CREATE TABLE IF NOT EXISTS ${db.tables.migrations} (
            "id" VARCHAR(36) PRIMARY KEY NOT NULL,
            "checksum" VARCHAR(64) NOT NULL,
            "finished_at" TIMESTAMP,
            "migration_name" VARCHAR(255) NOT NULL,
            "logs" TEXT,
            "rolled_back_at" TIMESTAMP,
            "started_at" TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
            "applied_steps_count" INTEGER NOT NULL DEFAULT 0
          )`,
        );
        if (db.provider === "sqlite") await tx.$executeRawUnsafe(`DELETE FROM ${db.tables.migrations} WHERE 0`);
        return applyPending(db, tx, migrations);
      },
      { maxWait: 30_000, timeout: 60_000 },
    );
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      // SQLite: a process that lost the race for the write lock tries again.
      if (db.provider !== "sqlite" || attempt >= 50 || !/locked|busy/i.test(String((error as Error).message)))
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
}

async function applyPending(db: Tables, tx: Sql, migrations: readonly Migration[]): Promise<string[]> {
  const rows = await tx.$queryRawUnsafe<Array<{ migration_name: string }>>(
    `SELECT "migration_name" FROM ${db.tables.migrations} WHERE "rolled_back_at" IS NULL`,
  );
  const applied = new Set(rows.map((r) => r.migration_name));
  const done: string[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    const sql = migration.sql.replaceAll("__SCHEMA__", db.schema).replaceAll("__PREFIX__", db.prefix);
    const statements = statementsOf(sql);
    for (const statement of statements) await tx.$executeRawUnsafe(statement);
    const checksum = createHash("sha256").update(migration.sql).digest("hex");
    await tx.$executeRawUnsafe(
      db.sql(
        `INSERT INTO ${db.tables.migrations} ("id", "checksum", "finished_at", "migration_name", "applied_steps_count") VALUES (?, ?, CURRENT_TIMESTAMP, ?, ?)`,
      ),
      randomUUID(),
      checksum,
      migration.name,
      statements.length,
    );
    done.push(migration.name);
  }
  return done;
}

/** The statements of a migration file: comments dropped, split at the `;` that ends a line. */
function statementsOf(sql: string): string[] {
  return sql
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("--"))
    .join("\n")
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ""))
    .filter((s) => s.length > 0);
}
