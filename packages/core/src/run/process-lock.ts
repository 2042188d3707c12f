import { CheckpointConflict } from "../base/errors.js";
import type { CheckpointStore } from "../store/contract.js";
import { AnchoredStore } from "../store/anchored-store.js";

/** The runs this process drives now, per store. */
const driving = new WeakMap<CheckpointStore, Set<string>>();

/**
 * Runs `work` (a claim and the drive that follows) while no other drive of
 * this process holds the run in this store. Every runner of a process shares
 * one lease owner, so the store lets the process claim its own run again: a
 * worker picking up a run that a decision in the same process is driving
 * would cut that drive off mid-tool. This refuses it before anything is written.
 */
export async function whileDriving<T>(store: CheckpointStore, runId: string, work: () => Promise<T>): Promise<T> {
  // A runner with an anchor drives the same runs as one without it, on the same store.
  const key = store instanceof AnchoredStore ? store.inner : store;
  let runs = driving.get(key);
  if (runs === undefined) {
    runs = new Set();
    driving.set(key, runs);
  }
  if (runs.has(runId))
    throw new CheckpointConflict(runId, "this process drives the run already; it is not claimed a second time.");
  runs.add(runId);
  try {
    return await work();
  } finally {
    runs.delete(runId);
  }
}
