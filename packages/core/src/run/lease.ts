import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { CheckpointConflict, CheckpointNotFound, InvalidInput, QueueFull } from "../base/errors.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { MAX_OWNER_LENGTH, SAVE_RENEWS_AFTER } from "../store/rules.js";
import type { CheckpointStore, LeaseTerms } from "../store/contract.js";
import { instruments } from "../telemetry/metrics.js";

/** How long a lease lasts unless a runner says otherwise: a dead worker's runs are claimable this long after its last write. */
const DEFAULT_LEASE_MS = 30_000;

/** What a runner is told about its leases (`lease` option of `FlowRunner`, the tool loop and the operator actions). */
export interface LeaseOptions {
  /**
   * The worker's id (default: `workerId()`, stable for the process), 1 to
   * `MAX_WORKER_ID_LENGTH` characters: each drive's lease owner is it plus a
   * suffix of its own (`driveLease`).
   */
  readonly owner?: string;
  /** How long a lease lasts from its last renewal, in ms (default 30,000; at least 100). */
  readonly ms?: number;
}

/** What a drive adds to its worker's id: `#` and 8 random base64url characters. */
const DRIVE_SUFFIX_LENGTH = 9;

/** The longest worker id (`LeaseOptions.owner`): a drive's owner adds its suffix within the store's `MAX_OWNER_LENGTH`. */
const MAX_WORKER_ID_LENGTH = MAX_OWNER_LENGTH - DRIVE_SUFFIX_LENGTH;

const LEASE_OPTIONS: OptionTable<LeaseOptions> = { owner: true, ms: true };

let processWorkerId: string | undefined;

/** This process's worker id, `<host>:<pid>:<random>`: the same for every runner of the process, new for each process. */
export function workerId(): string {
  processWorkerId ??= `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`.slice(-MAX_WORKER_ID_LENGTH);
  return processWorkerId;
}

/**
 * The lease terms of one drive (a start, a claim, an operator's action):
 * the worker's id plus a suffix of its own, `<worker id>#<random>`. The store
 * exempts only a lease's own owner from its claim rule, so two drives of one
 * process, even on two store objects of one database, refuse each other's
 * live lease (`LeaseHeld`) as two processes do.
 */
export function driveLease(worker: LeaseTerms): LeaseTerms {
  return { owner: `${worker.owner}#${randomBytes(6).toString("base64url")}`, ms: worker.ms };
}

/** The lease terms a runner's options give, checked: `InvalidInput` before anything runs. */
export function leaseTerms(where: string, options: LeaseOptions | undefined): LeaseTerms {
  if (options !== undefined) checkOptions(`${where}: lease`, options, LEASE_OPTIONS);
  const owner = options?.owner ?? workerId();
  const ms = options?.ms ?? DEFAULT_LEASE_MS;
  if (typeof owner !== "string" || owner === "" || owner.length > MAX_WORKER_ID_LENGTH)
    throw new InvalidInput(`${where}: lease.owner must be a string of 1 to ${MAX_WORKER_ID_LENGTH} characters.`);
  if (!Number.isSafeInteger(ms) || ms < 100)
    throw new InvalidInput(`${where}: lease.ms must be a whole number of ms ≥ 100, not ${String(ms)}.`);
  return { owner, ms };
}

/** The keepers of this process's drives that hold a lease, by run id: a cancel made here reaches them at once. */
const keepersByRun = new Map<string, Set<LeaseKeeper>>();

/**
 * Tells this process's drives of `runId` that the run may have been taken
 * from them (`why`: it was cancelled here): each renews its lease at once,
 * and one whose renewal is refused has lost the run, as on its timer's. A
 * drive of the same run id on another database renews and goes on.
 */
export function checkLeasesOf(runId: string, why: string): void {
  for (const keeper of keepersByRun.get(runId) ?? []) keeper.check(why);
}

/**
 * Keeps one run's lease alive while its worker drives it. A claim sets the
 * lease, and so does every save once a third of it has passed (the store's
 * rule, `leaseAfterSave`); a timer renews it when a third passed with no such
 * save (a long tool call), so a worker that saves often adds no write. A
 * refused renewal means the run was taken over (or cancelled), or its lease
 * ran out and its full queue refused the renewal (`QueueFull`): the keeper
 * stops and tells its drive (`onLost`), which stops at once; the store fences
 * any write of it still on its way.
 */
export class LeaseKeeper {
  readonly #store: CheckpointStore;
  readonly #runId: string;
  readonly #terms: LeaseTerms;
  readonly #segment: () => number;
  readonly #onLost: (error: CheckpointConflict) => void;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /**
   * When the lease was last set, by this process's clock, as the write that
   * set it started and ended: the store set it between the two. The expiry is
   * counted from the start (never later than the store's); whether a later
   * save renewed it, from the end (never earlier).
   */
  #set: { readonly from: number; readonly to: number } | undefined;

  constructor(
    store: CheckpointStore,
    runId: string,
    terms: LeaseTerms,
    segment: () => number,
    onLost: (error: CheckpointConflict) => void = () => undefined,
  ) {
    this.#store = store;
    this.#runId = runId;
    this.#terms = terms;
    this.#segment = segment;
    this.#onLost = onLost;
  }

  /**
   * A running save that started at `startedAt` (`performance.now()`) was
   * just stored. The first one (a claim, a start) set the lease; a later one
   * surely did when it started a third of the lease after the last set ended
   * (the store renews on a save once a third has passed). Any other may or
   * may not have: the keeper counts on the last set it is sure of.
   */
  saved(startedAt: number): void {
    if (this.#stopped) return;
    const now = performance.now();
    if (this.#set === undefined || startedAt - this.#set.to >= this.#renewEvery)
      this.#set = { from: startedAt, to: now };
    this.#kept(true);
    this.#schedule(this.#set.from + this.#renewEvery - now);
  }

  /** Renews now, to learn whether the run is still this drive's (`checkLeasesOf`); `why` says what may have taken it. */
  check(why: string): void {
    if (this.#stopped || this.#set === undefined) return;
    clearTimeout(this.#timer);
    void this.#renew(why);
  }

  get #renewEvery(): number {
    return Math.floor(this.#terms.ms * SAVE_RENEWS_AFTER);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#renew(), Math.max(0, delayMs));
    this.#timer.unref();
  }

  /** Whether `checkLeasesOf` reaches this keeper: while it holds a lease, until it stops. */
  #kept(holding: boolean): void {
    const keepers = keepersByRun.get(this.#runId) ?? new Set<LeaseKeeper>();
    if (holding) keepersByRun.set(this.#runId, keepers.add(this));
    else if (keepers.delete(this) && keepers.size === 0) keepersByRun.delete(this.#runId);
  }

  /** Stops renewing; with `release`, hands the run back so another worker may claim it at once. */
  async stop(release: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#kept(false);
    // Released even when no save is known to have landed (a batch that failed after its save): the owner is
    // this drive's alone, so a release of a lease it does not hold does nothing.
    if (!release) return;
    // Best effort: a worker that cannot reach its store leaves the lease to run out.
    await this.#store.release(this.#runId, this.#segment(), this.#terms.owner).catch(() => undefined);
  }

  async #renew(why = "its lease renewal was refused (a cancel, or another worker's takeover)"): Promise<void> {
    const startedAt = performance.now();
    try {
      await this.#store.renew(this.#runId, this.#segment(), this.#terms);
      instruments().leaseRenewals.add(1);
      this.#set = { from: startedAt, to: performance.now() };
      this.#schedule(this.#renewEvery - (performance.now() - startedAt));
    } catch (error) {
      // A lease that ran out, renewed while its queue is full, is a take refused: its slot went to another run.
      const full = error instanceof QueueFull;
      if (full || error instanceof CheckpointConflict || error instanceof CheckpointNotFound) {
        if (this.#stopped) return;
        await this.stop(false);
        instruments().leaseLosses.add(1);
        const lost = full ? "its lease ran out and its queue gave the slot to another run" : why;
        this.#onLost(
          new CheckpointConflict(
            this.#runId,
            `this drive lost the run: ${lost}. Its tools' signals are aborted; it starts no other call and records nothing more.`,
            { cause: error },
          ),
        );
        return;
      }
      // The store did not answer: try again soon (a tenth of the lease), while the lease may still be live.
      this.#schedule(Math.floor(this.#terms.ms / 10) - (performance.now() - startedAt));
    }
  }
}
