/**
 * What makes a kill soak count: a soak whose kills never landed inside a tool
 * proves nothing about recovery, so it fails with the one reason why.
 */

/** The figures of a soak the verdict reads. */
export interface ProofFigures {
  readonly kills: number;
  /** Runs recovery reported calls in doubt for (`RecoveryNeedsDecision`). */
  readonly inDoubtRuns: number;
  /** Calls recovery replayed from the log whose tool the ledger shows ran once only. */
  readonly replayedCalls: number;
}

/**
 * Undefined when the soak really exercised recovery; otherwise the one-line
 * reason it proved nothing: no kill, no run in doubt, or no call replayed.
 */
export function vacuousSoak(figures: ProofFigures): string | undefined {
  if (figures.kills === 0)
    return "no worker was killed: the soak proved nothing about recovery; give it more runs (--runs).";
  if (figures.inDoubtRuns === 0)
    return `${figures.kills} kills but no run was in doubt: no kill landed inside a tool; give it more runs (--runs).`;
  if (figures.replayedCalls === 0)
    return `${figures.kills} kills but no call replayed from the log: no kill landed between a call's result and its checkpoint; give it more runs (--runs).`;
  return undefined;
}
