import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointStore,
  LeaseHeld,
  StoreUnavailable,
} from "@durable/core";
import type { CheckpointRow, LeaseClaim, RunWrite } from "@durable/core/store";
import { LateTimers } from "@durable/test-utils/late-timers";
import type { LeaseWrite } from "./ledger.js";

/** Operations slower than this are reported to the soak, which keeps the longest per fault. */
const REPORT_ABOVE_MS = 50;

/** What a worker's store tells the soak as it goes. */
export interface StoreWatch {
  /**
   * An operation stayed pending this long (resolved or failed), when over 50 ms; less the time this
   * process ran its timers late meanwhile (a starved process fires the store's deadlines late too).
   */
  slow(ms: number): void;
  /** An operation failed with `StoreUnavailable`. */
  unavailable(): void;
  /** A claim was refused: another worker's lease on the run was live. */
  leaseHeld(runId: string): void;
  /**
   * A save of the run's `step` is about to be sent, alone or in a batch (a claim found in doubt is dated by it);
   * `waiting`: the save a recovery makes after its claim when it stops for a decision.
   */
  saving(runId: string, step: number, waiting: boolean): void;
  /** A save claimed a run with `takeOver`. */
  tookOver(runId: string): void;
  /**
   * A write that may set the run's lease (a save, a renewal) was sent at `sent` and answered, or failed
   * unanswered, by `answered` (`Date.now()` times): the earliest this process could have missed the answer
   * (a process the machine starved sees an answer late).
   */
  leaseWritten(runId: string, write: Omit<LeaseWrite, "worker">): void;
}

/**
 * The store with every operation watched: timed (`listUnfinished` up to each
 * id, less the lateness of this process's timers), its `StoreUnavailable` failures and `LeaseHeld` refusals reported, and
 * every claim with `takeOver` reported before it is made. Each checkpoint
 * save waits `saveDelayMs` before it is sent.
 */
export function watchedStore(store: CheckpointStore, watch: StoreWatch, saveDelayMs = 0): CheckpointStore {
  const timers = new LateTimers();
  // As if checkpoints were slow to write: a kill then often lands between a call's stored result and the checkpoint after it.
  const slowly = async <T>(save: () => Promise<T>): Promise<T> => {
    if (saveDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, saveDelayMs));
    return save();
  };
  const time = async <T>(op: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await op();
    } catch (error) {
      if (error instanceof StoreUnavailable) watch.unavailable();
      throw error;
    } finally {
      const ended = performance.now();
      if (ended - started > REPORT_ABOVE_MS)
        void timers.settled().then(() => {
          const ms = ended - started - timers.within(started, ended);
          if (ms > REPORT_ABOVE_MS) watch.slow(ms);
        });
    }
  };
  /** A write that may set the run's lease, watched: reported once answered, or failed other than by a refusal. */
  const leaseWrite = async <T>(runId: string, kind: LeaseWrite["kind"], write: () => Promise<T>): Promise<T> => {
    const sent = Date.now();
    const answered = (outcome: LeaseWrite["outcome"]) => {
      const at = performance.now();
      const offset = Date.now() - at;
      void timers.settled().then(() => {
        const by = Math.round(timers.stalledSince(at) + offset);
        watch.leaseWritten(runId, { sent, answered: Math.max(sent, by), kind, outcome });
      });
    };
    try {
      const result = await time(write);
      answered("accepted");
      return result;
    } catch (error) {
      const refused =
        error instanceof LeaseHeld || error instanceof CheckpointConflict || error instanceof CheckpointNotFound;
      answered(refused ? "refused" : "unanswered");
      throw error;
    }
  };
  /** Sends a write that holds a checkpoint (a save, or a batch with one): late by `saveDelayMs`, watched. */
  const saving = (
    runId: string,
    step: number,
    row: CheckpointRow,
    lease: LeaseClaim | undefined,
    write: () => Promise<void>,
  ): Promise<void> => {
    const send = () => {
      watch.saving(runId, step, row.waitsForDecision === true);
      if (lease?.takeOver === true) watch.tookOver(runId);
      return leaseWrite(runId, "save", write);
    };
    return slowly(send).catch((error: unknown) => {
      if (error instanceof LeaseHeld) watch.leaseHeld(runId);
      throw error;
    });
  };
  const commit = store.commit?.bind(store);
  const listQueued = store.listQueued?.bind(store);
  return {
    save: (runId, step, checkpoint, lease) =>
      saving(runId, step, checkpoint, lease, () => store.save(runId, step, checkpoint, lease)),
    ...(commit === undefined
      ? {}
      : {
          commit: (runId: string, writes: readonly RunWrite[]) => {
            const save = writes.find((w) => w.kind === "save");
            return save === undefined
              ? time(() => commit(runId, writes))
              : saving(runId, save.step, save.row, save.lease, () => commit(runId, writes));
          },
        }),
    latest: (runId) => time(() => store.latest(runId)),
    renew: (runId, segment, terms) => leaseWrite(runId, "renew", () => store.renew(runId, segment, terms)),
    release: (runId, segment, owner) => time(() => store.release(runId, segment, owner)),
    leaseOf: (runId) => time(() => store.leaseOf(runId)),
    listUnfinished: (flow, options) => timedListing(store.listUnfinished(flow, options), time),
    ...(listQueued === undefined ? {} : { listQueued: (queue: string) => timedListing(listQueued(queue), time) }),
    delete: (runId) => time(() => store.delete(runId)),
    recordCall: (runId, segment, seq, sealed) => time(() => store.recordCall(runId, segment, seq, sealed)),
    calls: (runId) => time(() => store.calls(runId)),
    close: () => {
      timers.stop();
      return store.close();
    },
  };
}

/** A listing with each page's read timed by `time`. */
async function* timedListing<T>(
  listing: AsyncIterable<T>,
  time: <R>(op: () => Promise<R>) => Promise<R>,
): AsyncIterable<T> {
  const items = listing[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await time(() => items.next());
      if (next.done === true) return;
      yield next.value;
    }
  } finally {
    // A worker that stops listing early (it is full) closes the store's listing too.
    await items.return?.().catch(() => undefined);
  }
}
