import { eachConcurrently } from "../base/concurrent.js";
import { errorText, InvalidInput } from "../base/errors.js";
import type { CheckpointStore } from "../store/contract.js";
import type { DriveResult, RecoverEachOptions, RecoverOptions, Recovered } from "./program.js";

/** What recovering many runs needs of a driver: its store and name, and its recovery of one run. */
interface Recovering<R> {
  readonly store: CheckpointStore;
  readonly name: string;
  recover(runId: string, options: RecoverOptions): Promise<DriveResult<R>>;
}

/**
 * Recovers the driver's claimable runs (running, with no live lease: never
 * one another worker holds; with `takeOver`, every unfinished run), several
 * at once, and yields each outcome as it settles. Reads the store's listing
 * as it goes, so memory stays flat.
 */
export function recoverEach<R>(driver: Recovering<R>, options: RecoverEachOptions = {}): AsyncGenerator<Recovered<R>> {
  const { concurrency = 8, ...recover } = options;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new InvalidInput(`recoverEach: concurrency must be a whole number ≥ 1, not ${String(concurrency)}.`);
  // An operator's takeover goes on with every unfinished run, held or not, paused ones as their paused results.
  const listing = driver.store.listUnfinished(driver.name, { claimable: recover.takeOver !== true });
  return eachConcurrently(listing, concurrency, (runId) => driver.recover(runId, recover));
}

/** `recoverEach`, collected: each claimable run's id mapped to its result or to the error that stopped it. For small numbers of runs. */
export async function recoverAll<R>(
  driver: Recovering<R>,
  options: RecoverEachOptions = {},
): Promise<Map<string, DriveResult<R> | Error>> {
  const results = new Map<string, DriveResult<R> | Error>();
  for await (const settled of recoverEach(driver, options))
    results.set(settled.item, settled.ok ? settled.value : asError(settled.error));
  return results;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(errorText(error));
}
