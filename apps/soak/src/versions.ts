/**
 * The versions soak (`pnpm soak --versions`): a rolling deploy under kills.
 * Its starter starts the runs with `runner.start` (the workers take them),
 * a backlog ahead of the workers: the first half on version 1 of the soak's
 * flow; once that half is started the deploy begins (src/deploy.ts), and once
 * it is over every run starts on version 2 (a receipt node added). Meanwhile
 * it starts none, so the first workers of version 2 have nothing of their own
 * to do: they meet the runs of version 1 left (queued, given up, or their
 * worker killed), which they must leave. The verdict is in
 * src/version-verdict.ts.
 */
import { writeFileSync } from "node:fs";
import type { Progress } from "./slot.js";
import type { Starter } from "./starter.js";
import { openSoakStore, untilStored } from "./store.js";
import { order, runIdOf, type SoakVersion, soakFlow, startingRunner } from "./tickets.js";

/** How the versions soak deploys version 2 and keeps runs of version 1 in flight across it. */
export interface VersionSoak {
  /** How many worker slots the deploy moves to version 2, one at a time (the others serve version 1 to the end). */
  readonly deployed: number;
  /** The pause after each slot's new process is up (it said "ready"), before the deploy stops the next. */
  readonly pauseMs: number;
  /** How many runs the starter keeps started and not done: the runs of version 1 the deploy finds unfinished. */
  readonly backlog: number;
}

/**
 * Half the slots, 2 s apart; a backlog of 16 runs per worker (four times what one drives at once), a third of the
 * runs at most, so the deploy comes after a while.
 */
export function versionSoak(workers: number, runs: number): VersionSoak {
  const backlog = Math.max(1, Math.min(16 * workers, Math.floor(runs / 3)));
  return { deployed: Math.floor(workers / 2), pauseMs: 2_000, backlog };
}

/** The version run k starts on: the first half of the runs on 1, the rest on 2. */
export function versionOfRun(k: number, runs: number): SoakVersion {
  return k < Math.floor(runs / 2) ? 1 : 2;
}

/** Where the deploy stands: the starter sets `halfway` once the runs of version 1 are started, the deploy `over`. */
export interface DeployState {
  halfway: boolean;
  over: boolean;
}

/**
 * The versions soak's starter, in the soak's own process. It starts run k
 * once fewer than `backlog` runs started are not done (as the workers report
 * them), on its version (`versionOfRun`), the runs of version 2 only once the
 * deploy is over; it writes `startedFile` once every run is started, so the
 * workers may finish.
 */
export function startVersions(
  config: { url: string; prefix: string; runs: number; startedFile: string; versions: VersionSoak },
  progress: Progress,
  deploy: DeployState,
): Starter {
  let stopped = false;
  let failure: unknown;
  const startAll = async (): Promise<void> => {
    const store = await openSoakStore(config.url, config.prefix);
    try {
      const runner = startingRunner(store);
      for (let k = 0; k < config.runs; k++) {
        const version = versionOfRun(k, config.runs);
        if (version === 2) deploy.halfway = true;
        while (!stopped && (k - progress.ran >= config.versions.backlog || (version === 2 && !deploy.over)))
          await sleep(50);
        if (stopped) return;
        await untilStored(() => runner.start(soakFlow(version), order(k), { runId: runIdOf(k) }));
      }
      writeFileSync(config.startedFile, `${config.runs}\n`);
    } finally {
      await store.close();
    }
  };
  const starting = startAll().catch((error: unknown) => {
    failure = error ?? new Error("the starter failed");
  });
  return {
    check() {
      if (failure !== undefined) throw new Error(`the starter failed: ${String(failure)}`);
    },
    async stop() {
      stopped = true;
      await starting;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
