import type { RunSummary, RunQuery } from "@durable/core/store";
import { type CheckpointStore, InvalidInput } from "@durable/core";
import { classifyCalls, DurableRun, readCallLog, readEnvelope, type Sealer } from "@durable/core/runner";
import { problemOf } from "./run-view.js";

/** What a run's row marks, beside its status. */
export type RunMark = "recovered" | "needs decision" | "needs approval" | "retrying" | "cancelled";

/** A run as the list shows it: the store's summary, its marks, and why it could not be read, if it could not. */
export interface ListedRun extends RunSummary {
  readonly marks: readonly RunMark[];
  readonly problem?: string;
  /**
   * The code of the @durable error behind `problem`: `CHECKPOINT_STORE_CORRUPT` when its seal does not verify,
   * `ENCRYPTED` when it verifies and the console has no encryption key to open it.
   */
  readonly problemCode?: string;
}

/** One page of the list. */
export interface RunList {
  readonly runs: readonly ListedRun[];
  readonly next?: string;
}

/**
 * A page of runs, newest first, from the store's inspection capability,
 * each marked: recovered (a claim raised its segment), needs approval
 * (paused), needs decision (a call of its round in doubt), retrying (a call
 * waits between attempts) or cancelled (failed for good). Each run's latest
 * checkpoint is opened with the key (and a running run's call log read):
 * one that does not verify carries its problem.
 */
export async function readRunList(store: CheckpointStore, sealer: Sealer, query: RunQuery): Promise<RunList> {
  if (store.listRuns === undefined)
    throw new InvalidInput(
      "This store cannot list runs: it has no inspection capability (listRuns). Upgrade its package.",
    );
  const page = await store.listRuns(query);
  const runs = await Promise.all(page.runs.map((run) => marked(store, sealer, run)));
  return page.next === undefined ? { runs } : { runs, next: page.next };
}

async function marked(store: CheckpointStore, sealer: Sealer, run: RunSummary): Promise<ListedRun> {
  const marks: RunMark[] = run.segment > 0 ? ["recovered"] : [];
  if (run.status === "paused") marks.push("needs approval");
  try {
    // Every run shown is opened with the key: a row that does not verify is shown as a problem, never as listed.
    const latest = await DurableRun.latest(store, sealer, run.runId);
    const envelope = readEnvelope(run.runId, latest.data);
    if (latest.status === "done" || latest.status === "paused") return { ...run, marks };
    if (latest.status === "failed") return { ...run, marks: envelope.cancelled ? [...marks, "cancelled"] : marks };
    const round = classifyCalls(await readCallLog(store, sealer, run.runId, latest.calls), envelope.round);
    if (round.inDoubt.size > 0) marks.push("needs decision");
    if ([...round.next.values()].some((next) => next.notBefore !== undefined)) marks.push("retrying");
    return { ...run, marks };
  } catch (error) {
    const { problem, code } = await problemOf(store, sealer, run.runId, error);
    return { ...run, marks, problem, ...(code === undefined ? {} : { problemCode: code }) };
  }
}

/** True when there are runs and not one of them verifies: the console most likely has another key than the workers. */
export function noRunVerifies(list: RunList): boolean {
  return list.runs.length > 0 && list.runs.every((run) => run.problemCode === "CHECKPOINT_STORE_CORRUPT");
}
