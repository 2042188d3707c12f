/**
 * Replies Redis gives before it runs a command, so a retry cannot apply it
 * twice: a multi-key command on a slot being migrated (TRYAGAIN), a cluster
 * that lost a master and has not failed over yet (CLUSTERDOWN), a node
 * loading its data (LOADING). MOVED and ASK are followed by the cluster
 * client itself.
 */
const NOT_RUN = /^(TRYAGAIN|CLUSTERDOWN|LOADING)\b/;

/** The longest pause between two attempts: a failover takes a second or more, a migrating key milliseconds. */
const MAX_PAUSE_MS = 200;

/**
 * Runs `attempt` again while Redis answers that it did not run it, pausing
 * 10, 20, 40… ms (at most 200) between attempts, until `deadline` (ms since
 * the epoch): then the last refusal is thrown.
 */
export async function untilRun<T>(attempt: () => Promise<T>, deadline: number): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      const pause = Math.min(MAX_PAUSE_MS, 10 * 2 ** retry);
      if (!notRun(error) || Date.now() + pause >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Whether an error is a reply saying the command was not run. */
function notRun(error: unknown): boolean {
  return error instanceof Error && NOT_RUN.test(error.message);
}
