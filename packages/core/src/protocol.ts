import { CheckpointConflict, CheckpointNotFound } from "./errors.js";
import { isEnded, type CheckpointRow, type RunKind, type RunStatus } from "./checkpoint-store.js";

/** Where a run stands, as a store's latest row for it says: what the protocol's rules read. */
export interface RunHead {
  readonly step: number;
  readonly status: RunStatus;
  readonly flow: string;
  readonly kind: RunKind;
  readonly segment: number;
}

/**
 * The compare-and-set rules of `save`, for stores written in TypeScript: why
 * saving `step` over `head` (undefined for a new run) is refused, or
 * undefined when it is accepted. Every store gives the same reasons.
 */
export function saveRefusal(
  runId: string,
  step: number,
  row: CheckpointRow,
  head: RunHead | undefined,
): CheckpointConflict | undefined {
  if (head === undefined) {
    return step === 0
      ? undefined
      : new CheckpointConflict(runId, `nothing is stored, so the first step must be 0, not ${step}.`);
  }
  if (isEnded(head.status)) return new CheckpointConflict(runId, `the run ended (${head.status}).`);
  if (head.flow !== row.flow || head.kind !== row.kind)
    return new CheckpointConflict(runId, `the run belongs to ${head.kind} ${JSON.stringify(head.flow)}.`);
  if (step !== head.step + 1)
    return new CheckpointConflict(
      runId,
      `step ${step} is not the next one (${head.step + 1}): another worker holds the run.`,
    );
  if (row.segment < head.segment) {
    return new CheckpointConflict(
      runId,
      `segment ${row.segment} is older than the run's (${head.segment}): this worker was cut off.`,
    );
  }
  return undefined;
}

/**
 * The rules of `recordCall`: why record `seq` of `segment` is refused over
 * `head` (undefined for an unknown run), where `next` is how many records the
 * run's current segment holds; undefined when it is accepted.
 */
export function recordRefusal(
  runId: string,
  segment: number,
  seq: number,
  head: RunHead | undefined,
  next: number,
): CheckpointNotFound | CheckpointConflict | undefined {
  if (head === undefined) return new CheckpointNotFound(runId);
  if (isEnded(head.status))
    return new CheckpointConflict(runId, `the run ended (${head.status}); it takes no more calls.`);
  if (segment !== head.segment) {
    return new CheckpointConflict(
      runId,
      `call-log segment ${segment} is not the run's current one (${head.segment}): this worker was cut off.`,
    );
  }
  if (seq !== next)
    return new CheckpointConflict(runId, `call record ${seq} of segment ${segment} is not the next one (${next}).`);
  return undefined;
}
