import { type CallRecord, readCallLog } from "../log/call-log.js";
import type { CheckpointStore } from "../store/contract.js";
import type { DurableRun } from "./durable-run.js";
import type { Sealer } from "../seal/sealer.js";

/**
 * Reopens the calls of `round` whose tool's error ended them, right after a
 * retry's claim of the failed run: a `reopened` record each, so the round
 * runs them again with their attempts started over, while its other finished
 * calls replay. Returns the log as it then stands. A call an operator decided
 * to fail (`skip`) stays failed.
 */
export async function reopenFailed(
  store: CheckpointStore,
  sealer: Sealer,
  run: DurableRun,
  records: readonly CallRecord[],
  round: number,
): Promise<CallRecord[]> {
  const last = new Map<string, CallRecord>();
  for (const record of records) if (record.round === round && record.kind !== "model") last.set(record.callId, record);
  const failed = [...last.values()].filter((record) => record.kind === "error");
  for (const { callId, tool, args } of failed) await run.log.append({ round, callId, tool, kind: "reopened", args });
  return failed.length === 0 ? [...records] : readCallLog(store, sealer, run.runId, run.log.counts);
}
