/**
 * The versions soak's rolling deploy: once the starter has started the runs
 * of version 1, one slot at a time is stopped with SIGTERM (it drains, then
 * gives up what is left, as in any restart) and started again serving version
 * 2, with a pause between two. The soak's kills and restarts go on meanwhile;
 * a slot they end comes back at the version it serves then.
 */
import { runsByVersion } from "@durable/core";
import type { Progress, WorkerSlot } from "./slot.js";
import { KEY, openSoakStore } from "./store.js";
import { soakFlow } from "./tickets.js";
import type { DeployState, VersionSoak } from "./versions.js";

/** Deploys version 2 to the first `versions.deployed` slots, then sets `state.over`; returns how many it moved (fewer if the soak ended first). */
export async function rollingDeploy(
  slots: readonly WorkerSlot[],
  state: DeployState,
  target: { readonly url: string; readonly prefix: string; readonly started: number },
  versions: VersionSoak,
  progress: Progress,
  log: (line: string) => void,
): Promise<number> {
  await until(() => state.halfway || progress.over);
  const store = await openSoakStore(target.url, target.prefix);
  let moved = 0;
  try {
    for (const slot of slots.slice(0, versions.deployed)) {
      // Not while the kill schedule ends the slot's process: the deploy ends the one that replaces it.
      await until(() => !slot.ending || progress.over);
      if (progress.over || slot.finished) break;
      await slot.redeploy(2);
      // As a rolling deploy waits for each new instance to be up before it moves on.
      await until(() => slot.ready || slot.ending || progress.over);
      moved += 1;
      // What a deployment waits on before it retires the old code: the runs left per version, as the store has them.
      const left = await runsByVersion(soakFlow().name, { checkpoints: store, checkpointKey: KEY });
      const counts = left.map(({ version, runs }) => `${runs} of version ${String(version)}`).join(", ");
      const at = `${((Date.now() - target.started) / 1000).toFixed(1)} s`;
      log(
        `deployed version 2 to worker ${slots.indexOf(slot)} (SIGTERM; ${moved} of ${versions.deployed}, ${at}); runs left: ${counts || "none"}`,
      );
      if (moved < versions.deployed) await until(() => progress.over, versions.pauseMs);
    }
  } finally {
    state.over = true;
    await store.close();
  }
  return moved;
}

/** Resolves once `done()` holds (looked at every 50 ms), or after `ms`. */
async function until(done: () => boolean, ms = Number.POSITIVE_INFINITY): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50));
}
