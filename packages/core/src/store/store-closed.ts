import { StoreUnavailable } from "../base/errors.js";

/** What a store was doing: the operation, and the run it worked on (none for a listing or a migration). */
export interface StoreOperation {
  readonly what: string;
  readonly runId?: string | undefined;
}

/**
 * What an operation of a store that was closed fails with, in every store,
 * instead of the driver's own words (pg's "Cannot use a pool after calling
 * end on the pool") or a new connection: which run was still using it, the
 * operation, and what to do. Given `cause`, the driver's error it replaces.
 */
export function closedWhileUsed(operation: StoreOperation, cause?: unknown): StoreUnavailable {
  const user = operation.runId === undefined ? "" : ` while run ${JSON.stringify(operation.runId)} was using it`;
  return new StoreUnavailable(
    `The store was closed${user} (${operation.what} after close()): stop what uses a store (await worker.stop()) before closing it.`,
    cause === undefined ? undefined : { cause },
  );
}
