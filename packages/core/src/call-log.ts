import type { JsonValue } from "./canonical.js";
import { CheckpointStoreCorrupt } from "./errors.js";
import type { Sealer } from "./seal.js";
import type { CheckpointStore } from "./store.js";

/**
 * What a record says of a call: `started` before the tool can run, then `done`
 * with its result, `pending` while it waits on an approval, or `unrecordable`
 * when its result could not be sealed.
 */
export type CallRecordKind = "started" | "done" | "pending" | "unrecordable";

/** One verified call-log record. */
export interface CallRecord {
  readonly runId: string;
  readonly segment: number;
  readonly seq: number;
  /** The unit of work the call belongs to: a flow's superstep, a loop's turn. */
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
  /** On `unrecordable`: why the result could not be sealed. */
  readonly reason?: string;
}

/** What a caller gives to append a record; the log adds run id, segment and number. */
export type CallEntry = Omit<CallRecord, "runId" | "segment" | "seq">;

const KINDS: ReadonlySet<unknown> = new Set(["started", "done", "pending", "unrecordable"]);

/**
 * The writing end of one run's call log for one segment. Records are sealed
 * and numbered when appended and reach the store one after another, so the
 * numbers stored never have a gap, even when calls run concurrently.
 */
export class CallLog {
  readonly runId: string;
  readonly segment: number;
  readonly #store: CheckpointStore;
  readonly #sealer: Sealer;
  #nextSeq = 0;
  #count: number;
  #tail: Promise<void> = Promise.resolve();

  /** @param known how many records the run already has in earlier segments. */
  constructor(store: CheckpointStore, sealer: Sealer, runId: string, segment: number, known: number) {
    this.#store = store;
    this.#sealer = sealer;
    this.runId = runId;
    this.segment = segment;
    this.#count = known;
  }

  /** How many records of the run are stored or on their way: sealed into the next checkpoint. */
  get count(): number {
    return this.#count;
  }

  /**
   * Seals the entry (an `InvalidInput` if it is not plain JSON: nothing is then
   * queued) and resolves once the store holds it. After one write fails, every
   * later append fails with the same error: the log's numbering is no longer known.
   */
  append(entry: CallEntry): Promise<void> {
    const seq = this.#nextSeq;
    const record: CallRecord = { runId: this.runId, segment: this.segment, seq, ...entry };
    const sealed = this.#sealer.seal("call", record, `the ${entry.kind} record of ${entry.tool}`);
    this.#nextSeq += 1;
    this.#count += 1;
    const write = this.#tail.then(() => this.#store.recordCall(this.runId, this.segment, seq, sealed));
    this.#tail = write;
    return write;
  }
}

/**
 * Reads and verifies a run's whole call log: every seal, the numbering (each
 * segment 0, 1, 2, … in order, segments rising) and that each record is this
 * run's. `minimum` is the count sealed into the latest checkpoint: fewer
 * records means some were deleted. Any failure is `CheckpointStoreCorrupt`.
 */
export async function readCallLog(
  store: CheckpointStore,
  sealer: Sealer,
  runId: string,
  minimum: number,
): Promise<CallRecord[]> {
  const rows = await store.calls(runId);
  const records: CallRecord[] = [];
  let segment = -1;
  let expected = 0;
  for (const row of rows) {
    const body = sealer.open("call", row.sealed, runId);
    if (!isRecord(body)) throw new CheckpointStoreCorrupt(runId, "a call record has an unknown shape.");
    if (body.runId !== runId || row.runId !== runId) {
      throw new CheckpointStoreCorrupt(runId, `a call record of another run (${JSON.stringify(body.runId)}) is in its log.`);
    }
    if (body.segment !== row.segment || body.seq !== row.seq) {
      throw new CheckpointStoreCorrupt(runId, "a call record's stored number differs from its sealed one.");
    }
    if (body.segment !== segment) {
      if (body.segment < segment) throw new CheckpointStoreCorrupt(runId, "call records are out of order.");
      segment = body.segment;
      expected = 0;
    }
    if (body.seq !== expected) {
      throw new CheckpointStoreCorrupt(
        runId,
        `call-log segment ${segment} has record ${body.seq} where record ${expected} belongs: records are missing or out of order.`,
      );
    }
    expected += 1;
    records.push(body);
  }
  if (records.length < minimum) {
    throw new CheckpointStoreCorrupt(
      runId,
      `the latest checkpoint counts ${minimum} call records but only ${records.length} are stored.`,
    );
  }
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
    "args" in value
  );
}
