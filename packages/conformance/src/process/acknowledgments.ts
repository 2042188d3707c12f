import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { CheckpointStore } from "@durable/core";
import type { CallRecord } from "@durable/core/runner";
import { intercepted } from "./intercepted.js";
import { kitSealer } from "./scenarios.js";

/**
 * The crash group's witness of what a worker was promised. Before each
 * `recordCall` the worker appends `<runId> <callId> <kind> issued` to a file,
 * and `... acked` once the store resolved it. The file is written by the
 * worker, not the store, and a line appended before a SIGKILL survives it
 * (the kernel holds the write), so it says what the store acknowledged even
 * when the store later forgets it.
 */
export function acknowledging(store: CheckpointStore, file: string): CheckpointStore {
  return intercepted(store, {
    async recordCall(id, segment, seq, sealed) {
      const record = kitSealer.open("call", sealed, id) as unknown as CallRecord;
      const line = `${id} ${record.callId} ${record.kind}`;
      appendFileSync(file, `${line} issued\n`);
      await store.recordCall(id, segment, seq, sealed);
      appendFileSync(file, `${line} acked\n`);
    },
  });
}

/** The acknowledgment file that goes with a side-effect file. */
export function acknowledgmentsFile(effects: string): string {
  return `${effects}.acks`;
}

/** What a worker issued and what the store acknowledged of one call. */
export interface CallWitness {
  readonly startedIssued: boolean;
  readonly startedAcked: boolean;
  readonly doneIssued: boolean;
  readonly doneAcked: boolean;
}

/** Each call's witness for one run, by call id (calls never issued are absent). */
export function acknowledged(file: string, runId: string): Map<string, CallWitness> {
  const seen = new Set<string>();
  const calls = new Set<string>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const [id, callId, kind, state] = line.split(" ");
      if (id !== runId || callId === undefined) continue;
      calls.add(callId);
      seen.add(`${callId} ${kind} ${state}`);
    }
  }
  const has = (callId: string, kind: string, state: string) => seen.has(`${callId} ${kind} ${state}`);
  return new Map(
    [...calls].map((callId) => [
      callId,
      {
        startedIssued: has(callId, "started", "issued"),
        startedAcked: has(callId, "started", "acked"),
        doneIssued: has(callId, "done", "issued"),
        doneAcked: has(callId, "done", "acked"),
      },
    ]),
  );
}
