import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { CheckpointStore } from "@durable/core";
import type { StoredCall } from "@durable/core/store";
import type { CallRecord } from "@durable/core/runner";
import { intercepted } from "./intercepted.js";
import { kitSealer } from "./scenarios.js";

/**
 * The crash group's witness of what a worker was promised. Before each
 * `recordCall` the worker appends `<runId> <callId> <kind> <attempt> issued`
 * to a file, and `... acked` once the store resolved it (`<attempt>` is the
 * record's, `-` on a record without one, as `done`). The file is written by
 * the worker, not the store, and a line appended before a SIGKILL survives it
 * (the kernel holds the write), so it says what the store acknowledged even
 * when the store later forgets it.
 */
export function acknowledging(store: CheckpointStore, file: string): CheckpointStore {
  const witnessed = async (id: string, records: readonly StoredCall[], write: () => Promise<void>) => {
    const lines = records.map((one) => {
      const record = kitSealer.open("call", one.sealed, one) as unknown as CallRecord;
      return `${id} ${record.callId} ${record.kind} ${record.attempt ?? "-"}`;
    });
    appendFileSync(file, lines.map((line) => `${line} issued\n`).join(""));
    await write();
    appendFileSync(file, lines.map((line) => `${line} acked\n`).join(""));
  };
  return intercepted(store, {
    recordCall: (id, segment, seq, sealed) =>
      witnessed(id, [{ runId: id, segment, seq, sealed }], () => store.recordCall(id, segment, seq, sealed)),
    // A batch's records are acknowledged together, when the batch is.
    commit: (id, writes) =>
      witnessed(
        id,
        writes.flatMap((w) =>
          w.kind === "record" ? [{ runId: id, segment: w.segment, seq: w.seq, sealed: w.sealed }] : [],
        ),
        () => store.commit?.(id, writes) ?? Promise.reject(new Error("the store has no commit")),
      ),
  });
}

/** How many records of the run the workers have issued so far (the lines `<runId> … issued`). */
export function issuedRecords(file: string, runId: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.startsWith(`${runId} `) && line.endsWith(" issued")).length;
}

/** The acknowledgment file that goes with a side-effect file. */
export function acknowledgmentsFile(effects: string): string {
  return `${effects}.acks`;
}

/** One record a worker issued of a call: its kind, its attempt (`started` without one is the first), whether the store acknowledged it. */
interface WitnessedRecord {
  readonly kind: string;
  readonly attempt: number | undefined;
  acked: boolean;
}

/**
 * What a worker issued and what the store acknowledged of one call. A worker
 * issues a call's records one after another, each once the one before was
 * acknowledged, so the last record issued is the only one that may lack an
 * acknowledgment.
 */
export interface CallWitness {
  /** The attempt of the last `started` record issued (0 when none was). */
  readonly lastStarted: number;
  /** The last record issued is a `started` the store acknowledged: the call's last stored record is `started`. */
  readonly startedAckedLast: boolean;
  /** The attempt whose `failed` record is the last issued and was acknowledged (the call waits for its next attempt). */
  readonly failedAckedLast: number | undefined;
  /** Attempts whose `failed` record the store acknowledged. */
  readonly failedAcked: ReadonlySet<number>;
  readonly doneAcked: boolean;
  /** A `decided` record (an operator's decision on the call in doubt) was acknowledged. */
  readonly decidedAcked: boolean;
}

/** Each call's witness for one run, by call id (calls never issued are absent). */
export function acknowledged(file: string, runId: string): Map<string, CallWitness> {
  const calls = new Map<string, WitnessedRecord[]>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const [id, callId, kind, attempt, state] = line.split(" ");
      if (id !== runId || callId === undefined || kind === undefined) continue;
      const records = calls.get(callId) ?? [];
      calls.set(callId, records);
      if (state === "issued")
        records.push({ kind, attempt: attempt === "-" ? undefined : Number(attempt), acked: false });
      else {
        const issued = records.findLast((r) => r.kind === kind);
        if (issued !== undefined) issued.acked = true;
      }
    }
  }
  return new Map([...calls].map(([callId, records]) => [callId, witness(records)]));
}

function witness(records: readonly WitnessedRecord[]): CallWitness {
  const last = records.at(-1);
  const acked = (kind: string) => records.filter((r) => r.kind === kind && r.acked);
  const started = records.findLast((r) => r.kind === "started");
  return {
    lastStarted: started === undefined ? 0 : (started.attempt ?? 1),
    startedAckedLast: last?.kind === "started" && last.acked,
    failedAckedLast: last?.kind === "failed" && last.acked ? last.attempt : undefined,
    failedAcked: new Set(acked("failed").map((r) => r.attempt ?? 1)),
    doneAcked: acked("done").length > 0,
    decidedAcked: acked("decided").length > 0,
  };
}
