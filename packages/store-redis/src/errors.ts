import { CheckpointStoreCorrupt } from "@durable/core/store";

/** A one-line reason; an AggregateError (every address of a host refused) has no message of its own, but a code. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.message || (error as { code?: string }).code || error.name;
}

/** Redis's errors for what a run's keys hold: a key of another type, a script that failed on a value it read. */
const MALFORMED_KEYS = /^(WRONGTYPE|ERR user_script|ERR Error running script)/;

/** Whether Redis refused an operation for what the run's keys hold (retrying it would fail the same way forever). */
export function isMalformedKeys(error: unknown): boolean {
  return error instanceof Error && MALFORMED_KEYS.test(error.message);
}

/** The error of a run whose keys hold what no save writes. */
export function malformedKeys(runId: string, error: unknown): CheckpointStoreCorrupt {
  return new CheckpointStoreCorrupt(runId, `its keys hold what no save writes: Redis said ${describe(error)}.`, {
    cause: error,
  });
}

/** A script's reply, or `CheckpointStoreCorrupt` when it said {"corrupt", reason}: the run's head holds what no save writes. */
export function corruptOr(runId: string, reply: unknown): unknown {
  if (Array.isArray(reply) && reply[0] === "corrupt")
    throw new CheckpointStoreCorrupt(
      runId,
      `its stored head ${String(reply[1])}, which no save writes: the row was changed past the store, or written by a bug.`,
    );
  return reply;
}
