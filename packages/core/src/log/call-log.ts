import type { JsonValue } from "../base/json.js";
import { CheckpointStoreCorrupt } from "../base/errors.js";
import type { Sealer } from "../seal/sealer.js";
import { atOrAfter, type CallPosition, type CheckpointStore, type SegmentCounts } from "../store/contract.js";
import { checkedCall } from "../store/rows.js";
import type { RunWriter } from "./run-writer.js";

/**
 * What a record says of a call: `started` before each attempt of the tool,
 * then `done` with its result, `failed` when an attempt threw and another
 * follows (with when), `error` with the error that ended the call, `pending`
 * while it waits on an approval, `denied` when its approval was refused, or
 * `unrecordable` when its result could not be sealed; `decided` holds an
 * operator's decision on the call in doubt, and
 * `reopened` a retry of the failed run, which runs its failed call again. A
 * tool loop writes `model` before each model call, so its `maxSteps` counts
 * the calls made, crashes included.
 */
export type CallRecordKind =
  | "started"
  | "done"
  | "failed"
  | "error"
  | "pending"
  | "denied"
  | "unrecordable"
  | "decided"
  | "reopened"
  | "model";

/** One verified call-log record. */
export interface CallRecord {
  readonly runId: string;
  readonly segment: number;
  readonly seq: number;
  /** The round the call belongs to: the number of a flow's superstep or a loop's tool round. */
  readonly round: number;
  /** Names the call within its run: the same on every worker and every recovery. */
  readonly callId: string;
  readonly tool: string;
  readonly kind: CallRecordKind;
  readonly args: JsonValue;
  /** The tool's result, on `done`. */
  readonly result?: JsonValue;
  /** On `pending`: true when a synchronous approval port was being awaited in process. */
  readonly port?: boolean;
  /** On `unrecordable`: why the result could not be sealed; on `denied`: the reason the answer gave, if any. */
  readonly reason?: string;
  /** On `failed` and `error`: what the tool threw, as text (see `errorText`). */
  readonly error?: string;
  /** On `started` and `failed`: which attempt, from 1 (absent: the first); on `error`: how many were made. */
  readonly attempt?: number;
  /** On `failed`: when the next attempt may start, in ms since the epoch by the worker's clock. */
  readonly retryAt?: number;
  /** On `decided`: run the call again, or take `result` or `error` as its outcome. */
  readonly decision?: "rerun" | "result" | "error";
  /**
   * On `decided` with a result: true when the result is plain JSON that was
   * decided without the run's codec (an operator far from the workers, the
   * console): a worker passes it through its own codec, as a tool's result.
   */
  readonly plain?: boolean;
  /** On `decided`: who decided (the `by` recovery option, or the worker's id), and when (ISO 8601). */
  readonly by?: string;
  readonly at?: string;
}

/** What a caller gives to append a record; the log adds run id, segment and number. */
export type CallEntry = Omit<CallRecord, "runId" | "segment" | "seq">;

const KINDS: ReadonlySet<unknown> = new Set([
  "started",
  "done",
  "failed",
  "error",
  "pending",
  "denied",
  "unrecordable",
  "decided",
  "reopened",
  "model",
]);

/**
 * Records that need not be durable before the worker goes on: a call's
 * outcome may wait for the next commit (the next call's `started`, the next
 * checkpoint that must land). A crash before it leaves the call in doubt, as
 * a crash between the tool and its record always could.
 */
const MAY_WAIT: ReadonlySet<CallRecordKind> = new Set(["done", "error"]);

/**
 * The writing end of one run's call log for one segment. Records are sealed
 * and numbered when appended and reach the store in order through the run's
 * writer, so the numbers stored never have a gap, even when calls run
 * concurrently.
 */
export class CallLog {
  readonly runId: string;
  readonly segment: number;
  readonly #writer: RunWriter;
  readonly #sealer: Sealer;
  #nextSeq = 0;
  #earlier: number[];

  /** @param earlier what is known of the run's earlier segments: at least this many records each. */
  constructor(writer: RunWriter, sealer: Sealer, runId: string, segment: number, earlier: SegmentCounts) {
    this.#writer = writer;
    this.#sealer = sealer;
    this.runId = runId;
    this.segment = segment;
    this.#earlier = Array.from({ length: segment }, (_, s) => earlier[s] ?? 0);
  }

  /**
   * Records per segment, this one's included, sealed into the next
   * checkpoint: every record appended so far. The writer sends them before
   * that checkpoint (in its batch, or earlier), and a failed record fails
   * every later write, so a checkpoint that lands never counts a record that
   * did not.
   */
  get counts(): SegmentCounts {
    return [...this.#earlier, this.#nextSeq];
  }

  /** Where the next record goes: a round that begins now has its records from here on. */
  get position(): CallPosition {
    return { segment: this.segment, seq: this.#nextSeq };
  }

  /**
   * Takes the counts of earlier segments from the log as read after a claim:
   * from then on the fenced workers can add none, so they are exact.
   */
  learn(records: readonly CallRecord[]): void {
    for (const record of records) {
      if (record.segment < this.segment)
        this.#earlier[record.segment] = Math.max(this.#earlier[record.segment] ?? 0, record.seq + 1);
    }
  }

  /** Resolves once every write queued so far (records, a running step, the run's step 0) landed. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /**
   * Seals the entry (an `InvalidInput` if it is not plain JSON: nothing is then
   * queued) and resolves once the store holds it; an outcome (`done`, `error`)
   * resolves once it is queued, and lands with the next commit. After one write
   * fails, every later append fails with the same error.
   */
  append(entry: CallEntry): Promise<void> {
    const seq = this.#nextSeq;
    const record: CallRecord = { runId: this.runId, segment: this.segment, seq, ...entry };
    const sealed = this.#sealer.seal("call", record, `the ${entry.kind} record of ${entry.tool}`);
    this.#nextSeq += 1;
    const mayWait = MAY_WAIT.has(entry.kind) && this.#writer.failure === undefined;
    const landed = this.#writer.write({ kind: "record", segment: this.segment, seq, sealed }, !mayWait);
    return mayWait ? Promise.resolve() : landed;
  }
}

/**
 * True for a record that ends its call (`done`, `error`, `denied`, or a decision of its outcome): no record of the
 * call may follow one.
 */
function isOutcome(record: CallRecord): boolean {
  return (
    record.kind === "done" ||
    record.kind === "error" ||
    record.kind === "denied" ||
    (record.kind === "decided" && record.decision !== "rerun")
  );
}

/**
 * Reads and verifies a run's whole call log: every seal, the numbering (each
 * segment 0, 1, 2, … in order, segments rising), that each record is this
 * run's, and that no record of a call follows its outcome (`done`, `error`,
 * `denied`: a finished call is never made again, so a later record would make its last
 * record, which recovery goes by, another outcome or in doubt). `sealed` is
 * what the latest checkpoint counts per segment: fewer records in any segment
 * means some were deleted. With `from` (where the round a recovery goes on
 * with began), only the records from there on are read and checked, and the
 * counts of the segments they are in. Any failure is `CheckpointStoreCorrupt`.
 */
export async function readCallLog(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  sealed: SegmentCounts,
  from?: CallPosition,
): Promise<CallRecord[]> {
  const given = await store.calls(runId, from);
  // A store of another make may ignore `from`: what it gives before it is not read.
  const rows = from === undefined ? given : given.filter((row) => atOrAfter(row, from));
  const records: CallRecord[] = [];
  const found: number[] = [];
  if (from !== undefined) found[from.segment] = from.seq;
  /** Finished calls, and the segment of the `error` that ended each one that failed (only those may be reopened). */
  const finished = new Map<string, number | undefined>();
  let segment = -1;
  let expected = 0;
  for (const stored of rows) {
    // A store of another make may give any shape: it is checked as the built-in stores check what they read.
    const row = { ...checkedCall(runId, stored), runId: stored.runId };
    const body = sealer.open("call", row.sealed, { ...row, runId });
    if (!isRecord(body)) throw new CheckpointStoreCorrupt(runId, "a call record has an unknown shape.");
    if (body.runId !== runId || row.runId !== runId) {
      throw new CheckpointStoreCorrupt(
        runId,
        `a call record of another run (${JSON.stringify(body.runId)}) is in its log.`,
      );
    }
    if (body.segment !== row.segment || body.seq !== row.seq) {
      throw new CheckpointStoreCorrupt(runId, "a call record's stored number differs from its sealed one.");
    }
    if (body.segment !== segment) {
      if (body.segment < segment) throw new CheckpointStoreCorrupt(runId, "call records are out of order.");
      segment = body.segment;
      expected = body.segment === from?.segment ? from.seq : 0;
    }
    if (body.seq !== expected) {
      throw new CheckpointStoreCorrupt(
        runId,
        `call-log segment ${segment} has record ${body.seq} where record ${expected} belongs: records are missing or out of order.`,
      );
    }
    if (body.kind === "reopened") {
      // A retry of the failed run reopens a call its tool's error ended, from a later segment: it may run again.
      const failedIn = finished.get(body.callId);
      if (failedIn === undefined || failedIn >= body.segment)
        throw new CheckpointStoreCorrupt(
          runId,
          `call ${JSON.stringify(body.callId)} is reopened, but no earlier error ended it.`,
        );
      finished.delete(body.callId);
    } else if (body.kind !== "model") {
      if (finished.has(body.callId)) {
        throw new CheckpointStoreCorrupt(
          runId,
          `call ${JSON.stringify(body.callId)} has a ${body.kind} record after its outcome: a finished call is never made again.`,
        );
      }
      if (isOutcome(body)) finished.set(body.callId, body.kind === "error" ? body.segment : undefined);
    }
    expected += 1;
    found[segment] = expected;
    records.push(body);
  }
  sealed.forEach((count, s) => {
    if (s >= (from?.segment ?? 0) && (found[s] ?? 0) < count) {
      throw new CheckpointStoreCorrupt(
        runId,
        `the latest checkpoint counts ${count} call records in segment ${s} but only ${found[s] ?? 0} are stored.`,
      );
    }
  });
  return records;
}

function isRecord(value: JsonValue): value is CallRecord & JsonValue {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return (
    typeof value["runId"] === "string" &&
    Number.isSafeInteger(value["segment"]) &&
    Number.isSafeInteger(value["seq"]) &&
    Number.isSafeInteger(value["round"]) &&
    typeof value["callId"] === "string" &&
    typeof value["tool"] === "string" &&
    KINDS.has(value["kind"]) &&
    "args" in value &&
    (value["attempt"] === undefined || (Number.isSafeInteger(value["attempt"]) && (value["attempt"] as number) >= 1)) &&
    (value["kind"] !== "error" || typeof value["error"] === "string") &&
    (value["kind"] !== "denied" || value["reason"] === undefined || typeof value["reason"] === "string") &&
    (value["kind"] !== "failed" ||
      (typeof value["error"] === "string" &&
        value["attempt"] !== undefined &&
        Number.isSafeInteger(value["retryAt"]))) &&
    (value["kind"] !== "decided" || isDecision(value))
  );
}

function isDecision(value: { readonly [key: string]: JsonValue | undefined }): boolean {
  if (typeof value["by"] !== "string" || typeof value["at"] !== "string") return false;
  switch (value["decision"]) {
    case "rerun":
      return true;
    case "result":
      return "result" in value && (value["plain"] === undefined || value["plain"] === true);
    case "error":
      return typeof value["error"] === "string";
    default:
      return false;
  }
}
