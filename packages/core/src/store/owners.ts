/**
 * The lease owner of a run asleep (`ctx.sleep`): the store holds the lease
 * until the wake time for no drive (a drive's owner ends with `#` and 8
 * characters), so every worker's claim before then is `LeaseHeld`.
 */
export const ASLEEP = "(asleep)";

/**
 * The lease owner of a run waiting for an event (`ctx.waitForEvent`), until
 * its timeout: held as `ASLEEP` is, except that an event sent to the run
 * releases it (`sendEvent`), and a save for it that has not seen every event
 * of the inbox takes none (`LeaseClaim.events`).
 */
export const WAITING = "(waiting)";

/** True for the owner of a lease that no drive holds: a sleep's or a wait's. */
export function isAsleepOwner(owner: string | undefined): boolean {
  return owner === ASLEEP || owner === WAITING;
}
