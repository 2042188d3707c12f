import type { CheckpointStore } from "@durable/core";
import type { RunWrite } from "@durable/core/store";
import { intercepted } from "./intercepted.js";

/** One write the store accepted, as it was made. */
type Accepted =
  | { readonly op: "commit"; readonly runId: string; readonly writes: readonly RunWrite[] }
  | { readonly op: "write"; readonly runId: string; readonly write: RunWrite };

/**
 * The store, noting every write it accepts, in order: what a backup of the
 * store holds at any moment. `restore` then rolls a run back to an earlier
 * copy of all its rows (the newest checkpoints gone with the records they
 * count), as an operator restoring a backup or an attacker replaying one
 * would, through the store's own API: store-agnostic, and every row as it
 * really was.
 */
export class BackedUpStore {
  readonly store: CheckpointStore;
  readonly #inner: CheckpointStore;
  readonly #accepted: Accepted[] = [];

  constructor(inner: CheckpointStore) {
    this.#inner = inner;
    const note = (entry: Accepted) => void this.#accepted.push(entry);
    this.store = intercepted(inner, {
      save: async (runId, step, row, lease) => {
        await inner.save(runId, step, row, lease);
        note({ op: "write", runId, write: { kind: "save", step, row, ...(lease === undefined ? {} : { lease }) } });
      },
      recordCall: async (runId, segment, seq, sealed) => {
        await inner.recordCall(runId, segment, seq, sealed);
        note({ op: "write", runId, write: { kind: "record", segment, seq, sealed } });
      },
      commit: async (runId, writes) => {
        await inner.commit?.(runId, writes);
        note({ op: "commit", runId, writes });
      },
    });
  }

  /** How many writes of the run were accepted up to and including the one that saved `step`. */
  writesUntilStep(runId: string, step: number): number {
    const mine = this.#accepted.filter((a) => a.runId === runId);
    const at = mine.findIndex((a) =>
      (a.op === "commit" ? a.writes : [a.write]).some((w) => w.kind === "save" && w.step === step),
    );
    if (at < 0) throw new Error(`no write of ${runId} saved step ${step}`);
    return at + 1;
  }

  /** Deletes the run and writes its first `count` accepted writes again: the run as a backup taken then holds it. */
  async restore(runId: string, count: number): Promise<void> {
    await this.#inner.delete(runId);
    const mine = this.#accepted.filter((a) => a.runId === runId).slice(0, count);
    for (const entry of mine) {
      if (entry.op === "commit") await this.#inner.commit?.(runId, entry.writes);
      else if (entry.write.kind === "save")
        await this.#inner.save(runId, entry.write.step, entry.write.row, entry.write.lease);
      else await this.#inner.recordCall(runId, entry.write.segment, entry.write.seq, entry.write.sealed);
    }
  }
}
