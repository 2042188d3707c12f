/**
 * What makes a kill soak count: a soak whose kills never landed inside a
 * tool, whose workers never took a run over, or that never restarted one
 * proves nothing about failover, so it fails with the one reason why.
 */

/** The figures of a soak the verdict reads. */
export interface ProofFigures {
  readonly kills: number;
  /** Rolling restarts (SIGTERM). */
  readonly restarts: number;
  /** Kills (and give-ups) that ended a worker while one of its tools ran. */
  readonly killsInsideTools: number;
  /** Runs a worker took over from another. */
  readonly recovered: number;
  /** Runs a claim found calls in doubt for. */
  readonly inDoubtRuns: number;
  /** Calls recovery replayed from the log whose tool the ledger shows ran once only. */
  readonly replayedCalls: number;
}

/**
 * Undefined when the soak really exercised failover; otherwise the one-line
 * reason it proved nothing: no kill, no restart, no kill inside a tool, no run
 * taken over, no run in doubt, or no call replayed.
 */
export function vacuousSoak(figures: ProofFigures): string | undefined {
  const more = "give it more runs (--runs).";
  if (figures.kills === 0) return `no worker was killed: the soak proved nothing about failover; ${more}`;
  if (figures.restarts === 0) return `${figures.kills} kills but no rolling restart (SIGTERM); ${more}`;
  if (figures.killsInsideTools === 0) return `${figures.kills} kills but none landed inside a tool; ${more}`;
  if (figures.recovered === 0) return `${figures.kills} kills but no worker took a run over; ${more}`;
  if (figures.inDoubtRuns === 0)
    return `${figures.killsInsideTools} kills inside tools but no run was found in doubt; ${more}`;
  if (figures.replayedCalls === 0)
    return `${figures.kills} kills but no call replayed from the log: no kill landed between a call's result and its checkpoint; ${more}`;
  return undefined;
}
