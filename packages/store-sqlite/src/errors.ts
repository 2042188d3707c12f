import { DurableError, InvalidInput, StoreUnavailable } from "@durable/core/store";

/** Turns a better-sqlite3 error into the typed error a caller can act on, keeping it as the cause. */
export function storeError(error: unknown, where: string): Error {
  if (error instanceof DurableError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const cause = { cause: error };
  if (typeof code === "string") {
    if (code === "SQLITE_NOTADB") return new InvalidInput(`${where} is not a SQLite database (${message}).`, cause);
    if (code.startsWith("SQLITE_READONLY"))
      return new InvalidInput(`${where} is read-only; the store must write to it (${message}).`, cause);
    if (code.startsWith("SQLITE_CANTOPEN")) return new InvalidInput(`${where} cannot be opened (${message}).`, cause);
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
      return new StoreUnavailable(
        `${where} stayed locked by another connection past the busy timeout (${message}).`,
        cause,
      );
    }
  }
  return new StoreUnavailable(`${where} failed: ${message}`, cause);
}
