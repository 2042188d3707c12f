/**
 * The versions soak's verdict, from the tools' ledger and the processes the
 * soak started: every tool call, claim and lease write of a run was made by a
 * process of the run's version, the node version 2 adds ran in every run of
 * version 2 and in none of version 1, and the deploy found runs of version 1
 * unfinished. (Every run done, with the calls of its version and sealed with
 * it, is `verify`'s.)
 */
import type { LedgerEntries } from "./ledger.js";
import type { Life } from "./slot.js";
import { indexOfRun, RECEIPT_TOOL, runIdOf, type SoakVersion } from "./tickets.js";
import { versionOfRun } from "./versions.js";

/** What the deploy did, as the ledger saw it. */
export interface VersionFigures {
  /** Slots the deploy moved to version 2, and how many it was to move. */
  readonly deployed: number;
  readonly toDeploy: number;
  /** Runs of version 1 whose last tool call ended after the first process of version 2 took runs ("ready"). */
  readonly v1AfterDeploy: number;
  /**
   * The most runs of the other version one worker of each version had left (`WorkerStatus.otherVersion`, as the
   * workers printed it): it met them, claimable, and went on with none.
   */
  readonly leftByV1: number;
  readonly leftByV2: number;
}

export interface VersionVerdictInput {
  readonly ledger: LedgerEntries;
  readonly lives: readonly Life[];
  readonly runs: number;
  readonly deployed: number;
  readonly toDeploy: number;
  readonly otherVersion: ReadonlyMap<SoakVersion, number>;
}

export function versionVerdict(input: VersionVerdictInput): { figures: VersionFigures; violations: string[] } {
  const { ledger, lives, runs } = input;
  const versionOf = (runId: string): SoakVersion => versionOfRun(indexOfRun(runId), runs);
  const served = new Map(lives.map((life) => [life.worker, life.version]));
  const violations: string[] = [];
  const by = (runId: string, what: string, worker: string, version: number | undefined): void => {
    if (version !== versionOf(runId))
      violations.push(
        `${runId} (version ${versionOf(runId)}): ${what} by worker ${worker}, a process of version ${String(version)}`,
      );
  };
  const receipts = new Set<string>();
  const lastTool = new Map<string, number>();
  for (const e of ledger.executions) {
    by(e.runId, `${e.tool} ran`, e.worker, e.version);
    if (e.version !== served.get(e.worker))
      violations.push(
        `worker ${e.worker} wrote version ${String(e.version)} with its ${e.tool}, but was started serving ${String(served.get(e.worker))}`,
      );
    if (e.tool === RECEIPT_TOOL) receipts.add(e.runId);
    lastTool.set(e.runId, Math.max(lastTool.get(e.runId) ?? 0, e.end ?? e.start));
  }
  for (const [runId, claims] of ledger.claims)
    for (const claim of claims) by(runId, "claimed", claim.worker, served.get(claim.worker));
  for (const [runId, writes] of ledger.leaseWrites)
    for (const write of writes) by(runId, `a ${write.kind} sent`, write.worker, served.get(write.worker));
  for (let k = 0; k < runs; k++) {
    const runId = runIdOf(k);
    const version = versionOfRun(k, runs);
    if (version === 2 && !receipts.has(runId)) violations.push(`${runId} (version 2): its receipt node never ran`);
    if (version === 1 && receipts.has(runId)) violations.push(`${runId} (version 1): a receipt was sent`);
  }
  const firstV2 = Math.min(
    ...lives.filter((life) => life.version === 2).map((life) => life.readyAt ?? Number.POSITIVE_INFINITY),
  );
  let v1AfterDeploy = 0;
  for (const [runId, at] of lastTool) if (versionOf(runId) === 1 && at > firstV2) v1AfterDeploy += 1;
  return {
    figures: {
      deployed: input.deployed,
      toDeploy: input.toDeploy,
      v1AfterDeploy,
      leftByV1: input.otherVersion.get(1) ?? 0,
      leftByV2: input.otherVersion.get(2) ?? 0,
    },
    violations,
  };
}

/** Undefined when the deploy happened while runs of version 1 were in flight; otherwise the one-line reason it proved nothing. */
export function vacuousDeploy(figures: VersionFigures): string | undefined {
  if (figures.deployed < figures.toDeploy)
    return `the deploy moved ${figures.deployed} of ${figures.toDeploy} workers to version 2 before the runs were done; give it more runs (--runs).`;
  if (figures.v1AfterDeploy === 0)
    return "no run of version 1 finished after the first worker of version 2 took runs: the deploy found none in flight; give it more runs (--runs).";
  if (figures.leftByV1 === 0 || figures.leftByV2 === 0)
    return `no worker of version ${figures.leftByV1 === 0 ? "1 met a run of version 2" : "2 met a run of version 1"} it had to leave: nothing showed a worker leaves another version's runs; give it more runs (--runs).`;
  return undefined;
}

/** The deploy's figures in one line. */
export function versionSummary(figures: VersionFigures): string {
  return (
    `deploy: ${figures.deployed} of ${figures.toDeploy} workers moved to version 2; ${figures.v1AfterDeploy} runs of version 1 finished after the first worker of version 2 took runs; ` +
    `runs of the other version left (WorkerStatus.otherVersion, the most by one process): ${figures.leftByV1} of version 2 by a worker of version 1, ${figures.leftByV2} of version 1 by one of version 2`
  );
}
