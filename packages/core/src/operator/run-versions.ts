import { checkOptions } from "../base/option-checks.js";
import { assertRunName } from "../base/names.js";
import { readEnvelope } from "../run/envelope.js";
import { STORAGE_OPTIONS, runStorage, type StorageOptions } from "../run/storage.js";
import type { RunVersion } from "../run/versions.js";
import { readLatest } from "../seal/chain.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";

/** How many runs of a name that have not ended are of one version. */
export interface VersionRuns {
  /** The version they started on (or were migrated to); undefined: code that named none. */
  readonly version: RunVersion | undefined;
  readonly runs: number;
}

/**
 * The runs of `name` that have not ended (running or paused), counted by the
 * version each one's latest checkpoint seals, most runs first: what a
 * deployment waits on before it retires a version's code (its count reaches
 * none). Reads each run's latest checkpoint, verified, with the workers'
 * storage options.
 */
export async function runsByVersion(name: string, options: StorageOptions): Promise<VersionRuns[]> {
  checkOptions("runsByVersion", options, STORAGE_OPTIONS);
  const { store, sealer } = runStorage("runsByVersion", options);
  return versionCounts(store, sealer, assertRunName(name));
}

/** `runsByVersion` with a store and a sealer that verifies (a reader's, a console's). */
export async function versionCounts(store: CheckpointStore, sealer: Sealer, name: string): Promise<VersionRuns[]> {
  const counts = new Map<RunVersion | undefined, number>();
  for await (const runId of store.listUnfinished(name)) {
    const { version } = readEnvelope(runId, (await readLatest(store, sealer, runId)).data);
    counts.set(version, (counts.get(version) ?? 0) + 1);
  }
  return [...counts].map(([version, runs]) => ({ version, runs })).sort((a, b) => b.runs - a.runs);
}
