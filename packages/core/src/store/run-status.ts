/** Where a run stands. `done` and `failed` are ended: a store refuses any later save. */
export type RunStatus = "running" | "paused" | "done" | "failed";

/** What kind of run a checkpoint belongs to. */
export type RunKind = "flow" | "loop";

/** The statuses `listUnfinished` returns. */
export const UNFINISHED: readonly RunStatus[] = ["running", "paused"];

/** True for `done` and `failed`. */
export function isEnded(status: RunStatus): boolean {
  return status === "done" || status === "failed";
}
