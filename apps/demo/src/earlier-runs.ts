import { type CheckpointStore, readJsonlEvents } from "@durable/core";
import { tickets } from "@durable-apps/shared/tickets";

/**
 * Deletes, through the store, the runs an earlier demo left: every run its
 * event log names and any unfinished run of the tickets flow, so worker 2
 * recovers this demo's orders only. The store's file itself stays: a viewer
 * may have it open, and a file deleted under an open connection reads as empty.
 */
export async function deleteEarlierRuns(store: CheckpointStore, eventLog: string): Promise<void> {
  const runIds = new Set(readJsonlEvents(eventLog).map((event) => event.runId));
  for await (const runId of store.listUnfinished(tickets.name)) runIds.add(runId);
  for (const runId of runIds) await store.delete(runId);
}
