import { DurableError } from "./durable-error.js";

// The errors of code that changed under runs in flight: a new version beside the old, a patch.

/**
 * A run recorded another version than the code recovering it serves: a
 * worker with that version's code goes on with it (one serving several
 * versions side by side picks the run's own), or an operator migrates it
 * (`migrateRun`). Nothing was written.
 */
export class VersionNotServed extends DurableError {
  readonly runId: string;
  /** The run's version, as its start recorded it (undefined: it started on code that named none). */
  readonly version: string | number | undefined;
  /** The version the refusing code serves. */
  readonly served: string | number | undefined;

  constructor(runId: string, name: string, version: string | number | undefined, served: string | number | undefined) {
    super(
      "VERSION_NOT_SERVED",
      `Run ${JSON.stringify(runId)} is a run of ${versionName(name, version)}, and this code serves ${versionName(name, served)}: serve that version beside this one until its runs end, or move the run with migrateRun.`,
    );
    this.runId = runId;
    this.version = version;
    this.served = served;
  }
}

function versionName(name: string, version: string | number | undefined): string {
  return version === undefined
    ? `${JSON.stringify(name)} with no version`
    : `${JSON.stringify(name)} version ${JSON.stringify(version)}`;
}

/**
 * A node's log holds a patch it answered false (`ctx.patched(id)`: the run
 * took the old branch) that its code no longer asks: the old branch was
 * removed while a run that took it was still going. The run fails before the
 * node makes a new call past it; retry it once the old branch is back.
 */
export class PatchRemoved extends DurableError {
  readonly runId: string;
  readonly patchId: string;
  readonly node: string;

  constructor(runId: string, patchId: string, node: string) {
    super(
      "PATCH_REMOVED",
      `Run ${JSON.stringify(runId)}: node ${JSON.stringify(node)} took the old branch of patch ${JSON.stringify(patchId)}, ` +
        "which this code no longer asks for: keep the old branch (if (await ctx.patched(id)) … else …) until every run that took it has ended, then retry this run.",
    );
    this.runId = runId;
    this.patchId = patchId;
    this.node = node;
  }
}
