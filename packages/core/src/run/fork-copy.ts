import type { CallRecord } from "../log/call-log.js";
import type { RunWriter } from "../log/run-writer.js";
import { sealNext } from "../seal/chain.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import type { Sealer } from "../seal/sealer.js";
import type { LeaseTerms } from "../store/contract.js";
import { readEnvelope } from "./envelope.js";

/** What a fork copies: the original's rows 0 to its fork step (whole data) and the records it takes, as verified. */
export interface HistoryCopy {
  readonly bodies: readonly CheckpointBody[];
  readonly records: readonly CallRecord[];
  /** How the fork's rows are chained (`sealNext`): changes after a snapshot, as a runner's. */
  readonly changes: { readonly on: boolean; readonly snapshotEvery?: number | undefined };
  /** The fork's lease while it is copied: no worker claims half a history. */
  readonly lease: LeaseTerms;
}

/**
 * Queues on `writer` the fork `forkId` of a run's history: each row and record
 * sealed again under the fork's id, the rows in a chain of their own (so no
 * row of one run passes for the other's), without `streamed` (the fork's
 * stream starts empty). The order is one the store accepts, since a record of
 * segment s lands only while the latest row has segment s: before each row,
 * the records it counts beyond the row before it; before a claim (a raised
 * segment), every record left of the segment it closes; after the last row,
 * the rest of its own. Step 0, the save that takes the fork's id, goes
 * alone in the first commit: `started` runs once it landed. Gives the last
 * row's body (the claim's link) and how many records each segment holds.
 */
export function copyHistory(
  writer: RunWriter,
  sealer: Sealer,
  forkId: string,
  copy: HistoryCopy,
  started: () => void,
): { readonly last: CheckpointBody; readonly counts: number[] } {
  const bySegment: CallRecord[][] = [];
  for (const record of copy.records) {
    const segment = bySegment[record.segment] ?? [];
    segment.push(record);
    bySegment[record.segment] = segment;
  }
  const counts: number[] = [];
  const append = (segment: number, upTo: number): void => {
    const records = bySegment[segment] ?? [];
    for (let seq = counts[segment] ?? 0; seq < Math.min(upTo, records.length); seq++) {
      const record = { ...(records[seq] as CallRecord), runId: forkId };
      const sealed = sealer.seal("call", record, `the ${record.kind} record of ${record.tool}`);
      // Awaited by the caller's flush, which fails with the first write that failed.
      void writer.write({ kind: "record", segment, seq, sealed }, false);
      counts[segment] = seq + 1;
    }
  };
  let last: CheckpointBody | undefined;
  for (const body of copy.bodies) {
    if (last !== undefined)
      append(last.segment, body.segment > last.segment ? Number.POSITIVE_INFINITY : (body.calls[body.segment] ?? 0));
    const { streamed: _streamed, chain: _chain, ...kept } = body;
    const next = sealNext(sealer, { ...kept, runId: forkId }, last, copy.changes);
    // Step 0 gives the store the run's queue place, as the original's did.
    const queue = body.step === 0 ? readEnvelope(body.runId, body.data).queue : undefined;
    const row = queue === undefined ? next.row : { ...next.row, queue };
    const first = body.step === 0;
    void writer.write({ kind: "save", step: body.step, row, lease: copy.lease }, first, first ? started : undefined);
    last = next.body;
  }
  if (last === undefined) throw new TypeError("copyHistory: a history holds step 0 at least.");
  append(last.segment, Number.POSITIVE_INFINITY);
  return { last, counts: Array.from({ length: last.segment + 1 }, (_, segment) => counts[segment] ?? 0) };
}
