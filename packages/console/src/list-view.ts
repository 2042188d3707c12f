import type { RunSummary, RunQuery } from "@durable/core/store";
import { type CheckpointStore, InvalidInput } from "@durable/core";
import { classifyCalls, DurableRun, readCallLog, readEnvelope, type Sealer } from "@durable/core/runner";
import { type RunVersion, runVersion } from "./run-version.js";
import { problemOf } from "./run-view.js";
import { type Waiting, waitingFor, waitingLabel } from "./waiting.js";

/** What a run's row marks, beside its status: what it waits for (`waitingLabel`), or that it was cancelled. */
export type RunMark = ReturnType<typeof waitingLabel> | "cancelled";

/**
 * A run as the list shows it: the store's summary, its marks, the version it started on (when its latest
 * checkpoint records one), and why it could not be read, if it could not.
 */
export interface ListedRun extends RunSummary {
  /** The version of the code that started it, when its start recorded one (`runVersion`). */
  readonly version?: RunVersion;
  readonly marks: readonly RunMark[];
  /** What it waits for (`waitingFor`), when something does hold it back. */
  readonly waiting?: Waiting;
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
 * each marked with what it waits for (`waitingFor`) or as cancelled. Each
 * run's latest checkpoint is opened with the key (and a running run's call
 * log read): one that does not verify carries its problem.
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

async function marked(store: CheckpointStore, sealer: Sealer, listed: RunSummary): Promise<ListedRun> {
  try {
    // Every run shown is opened with the key: a row that does not verify is shown as a problem, never as listed.
    const latest = await DurableRun.latest(store, sealer, listed.runId);
    // What a row shows comes from the sealed checkpoint: the store's plain columns are anyone's to write.
    const version = runVersion(latest.data);
    const run: RunSummary & { readonly version?: RunVersion } = {
      ...listed,
      name: latest.name,
      kind: latest.kind,
      step: latest.step,
      status: latest.status,
      segment: latest.segment,
      ...(version === undefined ? {} : { version }),
    };
    const disagreement = disagreementOf(listed, run);
    if (disagreement !== undefined)
      return { ...run, marks: [], problem: disagreement, problemCode: "CHECKPOINT_STORE_CORRUPT" };
    const envelope = readEnvelope(run.runId, latest.data);
    if (envelope.cancelled === true) return { ...run, marks: ["cancelled"] };
    const round =
      latest.status === "running"
        ? classifyCalls(await readCallLog(store, sealer, run.runId, latest.calls, envelope.roundStart), envelope.round)
        : undefined;
    // The list reads leases as the store listed them, against this machine's clock (the store's is not read per row).
    const now = Date.now();
    const leaseLive = listed.lease !== undefined && listed.lease.expiresAt > now;
    const waiting = waitingFor(latest, envelope, round, leaseLive, now);
    return waiting === undefined ? { ...run, marks: [] } : { ...run, marks: [waitingLabel(waiting)], waiting };
  } catch (error) {
    const { problem, code } = await problemOf(store, sealer, listed.runId, error);
    return { ...listed, marks: [], problem, ...(code === undefined ? {} : { problemCode: code }) };
  }
}

const COLUMNS = ["name", "kind", "status", "segment"] as const;

/**
 * How the store's listing of a run disagrees with its sealed latest
 * checkpoint, or undefined: a listing of an earlier step is a run that moved
 * on since, one of a later step or of other columns at the same step was
 * written past the store.
 */
function disagreementOf(listed: RunSummary, sealed: RunSummary): string | undefined {
  const says = (run: RunSummary, columns: readonly (keyof RunSummary)[]) =>
    columns.map((column) => `${column} ${JSON.stringify(run[column])}`).join(", ");
  if (listed.step > sealed.step)
    return `CheckpointStoreCorrupt: the store lists it at ${says(listed, ["step"])}, its latest sealed checkpoint is ${says(sealed, ["step"])}: a column was written past the store.`;
  if (listed.step < sealed.step) return undefined;
  const differ = COLUMNS.filter((column) => listed[column] !== sealed[column]);
  return differ.length === 0
    ? undefined
    : `CheckpointStoreCorrupt: the store lists it with ${says(listed, differ)}, its sealed checkpoint says ${says(sealed, differ)}: a column was written past the store.`;
}

/** True when there are runs and not one of them verifies: the console most likely has another key than the workers. */
export function noRunVerifies(list: RunList): boolean {
  return list.runs.length > 0 && list.runs.every((run) => run.problemCode === "CHECKPOINT_STORE_CORRUPT");
}

/** How the newest runs verify with the console's key, read at its start. */
export interface KeyCheck {
  /** Runs read (the newest, up to 20). */
  readonly runs: number;
  /** Of them, those whose signature does not verify. */
  readonly unverified: number;
}

/**
 * Opens the newest runs with the key, so a console given another key than
 * the workers' says so where it was started, not only in the page. Undefined
 * for a store that cannot list runs.
 */
export async function checkKey(store: CheckpointStore, sealer: Sealer): Promise<KeyCheck | undefined> {
  if (store.listRuns === undefined) return undefined;
  const { runs } = await readRunList(store, sealer, { limit: 20 });
  return { runs: runs.length, unverified: runs.filter((run) => run.problemCode === "CHECKPOINT_STORE_CORRUPT").length };
}
