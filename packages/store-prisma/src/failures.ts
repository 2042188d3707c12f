import { DurableError, StoreNotReady, StoreUnavailable } from "@durable/core/store";

/** What a Prisma error carries when its driver adapter failed. */
interface DriverFailure {
  readonly kind?: unknown;
  readonly table?: unknown;
  readonly originalCode?: unknown;
  readonly originalMessage?: unknown;
}

function driverFailure(error: unknown): DriverFailure | undefined {
  const meta = (error as { meta?: { driverAdapterError?: { cause?: DriverFailure } } } | undefined)?.meta;
  return meta?.driverAdapterError?.cause;
}

/** The table a query found missing (PostgreSQL 42P01, SQLite "no such table", Prisma P2021), or undefined. */
function missingTable(error: unknown): string | undefined {
  const driver = driverFailure(error);
  if (driver?.kind === "TableDoesNotExist" || driver?.originalCode === "42P01") return String(driver.table ?? "");
  // A statement sent straight through pg: its own error, with the SQLSTATE as `code`, the table in the message.
  if ((error as { code?: unknown } | undefined)?.code === "42P01")
    return /relation "([^"]+)"/.exec(String((error as Error).message))?.[1] ?? "";
  const prisma = error as { code?: unknown; meta?: { table?: unknown } } | undefined;
  if (prisma?.code === "P2021") return String(prisma.meta?.table ?? "");
  return undefined;
}

/** Prisma's messages span lines (the invocation, then the cause); the store's errors keep one. */
function oneLine(error: unknown): string {
  const driver = driverFailure(error);
  if (typeof driver?.originalMessage === "string") {
    return typeof driver.originalCode === "string"
      ? `${driver.originalMessage} (${driver.originalCode})`
      : driver.originalMessage;
  }
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim();
}

/**
 * A driver failure as one of the store's errors, with its cause: tables that
 * were never made are `StoreNotReady` (a retry cannot help), anything else
 * `StoreUnavailable`. `borrowed`: the store runs on the user's client, whose
 * own migrations may make the tables.
 */
export function wrap(error: unknown, what: string, borrowed: boolean): Error {
  if (error instanceof DurableError) return error;
  const table = missingTable(error);
  if (table !== undefined) {
    const name = table === "" ? "A table of the store" : `Table ${table}`;
    return new StoreNotReady(
      `${name} does not exist: the database was never migrated. Run \`await store.migrate()\` (or \`durable-prisma migrate <url>\`) once before using the store` +
        (borrowed
          ? ", or apply your own Prisma migrations with the store's models (prisma/models.prisma of @durable/store-prisma)."
          : "."),
      { cause: error },
    );
  }
  return new StoreUnavailable(`The database failed during ${what}: ${oneLine(error)}`, { cause: error });
}
