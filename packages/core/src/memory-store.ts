import { CheckpointNotFound, InvalidInput } from "./errors.js";
import { recordRefusal, saveRefusal } from "./protocol.js";
import {
  isEnded,
  type CheckpointRow,
  type CheckpointStore,
  type StoredCall,
  type StoredCheckpoint,
} from "./checkpoint-store.js";

/** One run's rows as the memory store keeps them. */
export interface MemoryRun {
  readonly checkpoints: StoredCheckpoint[];
  readonly calls: StoredCall[];
  /** Records per segment, to check that each `seq` is the next one. */
  readonly counts: Map<number, number>;
}

/** Everything a memory store holds, by run id. */
export type MemoryData = Map<string, MemoryRun>;

/** Options of `MemoryCheckpointStore`. */
export interface MemoryStoreOptions {
  /**
   * The rows to keep, shared with whoever else holds this map: two stores
   * given one map behave like two connections to one database. Tests use it
   * to reopen a store, or to change stored rows as an attacker would.
   */
  readonly data?: MemoryData;
}

/**
 * A `CheckpointStore` in this process's memory: the protocol exactly
 * (compare-and-set, fencing, numbering), lost when the process ends. The
 * reference every other store is measured against; a runner may use it unsigned.
 */
export class MemoryCheckpointStore implements CheckpointStore {
  readonly inProcessOnly = true;
  readonly #runs: MemoryData;

  constructor(options: MemoryStoreOptions = {}) {
    this.#runs = options.data ?? new Map();
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow): Promise<void> {
    checkRow(step, checkpoint);
    const entry = this.#runs.get(runId);
    const refused = saveRefusal(runId, step, checkpoint, entry?.checkpoints.at(-1));
    if (refused !== undefined) throw refused;
    if (entry === undefined)
      this.#runs.set(runId, { checkpoints: [stored(runId, step, checkpoint)], calls: [], counts: new Map() });
    else entry.checkpoints.push(stored(runId, step, checkpoint));
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const latest = this.#runs.get(runId)?.checkpoints.at(-1);
    if (latest === undefined) throw new CheckpointNotFound(runId);
    return latest;
  }

  async *listUnfinished(flow: string): AsyncIterable<string> {
    for (const [runId, entry] of [...this.#runs]) {
      const latest = entry.checkpoints.at(-1);
      if (latest !== undefined && latest.flow === flow && !isEnded(latest.status)) yield runId;
    }
  }

  async delete(runId: string): Promise<void> {
    this.#runs.delete(runId);
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (!Number.isSafeInteger(seq) || seq < 0) throw new InvalidInput(`seq must be a whole number ≥ 0, not ${seq}.`);
    const entry = this.#runs.get(runId);
    const next = entry?.counts.get(segment) ?? 0;
    const refused = recordRefusal(runId, segment, seq, entry?.checkpoints.at(-1), next);
    if (refused !== undefined || entry === undefined) throw refused ?? new CheckpointNotFound(runId);
    entry.calls.push(Object.freeze({ runId, segment, seq, sealed }));
    entry.counts.set(segment, next + 1);
  }

  async calls(runId: string): Promise<StoredCall[]> {
    return [...(this.#runs.get(runId)?.calls ?? [])];
  }

  async close(): Promise<void> {}
}

function stored(runId: string, step: number, row: CheckpointRow): StoredCheckpoint {
  const { status, segment, flow, kind, sealed } = row;
  return Object.freeze({ runId, step, status, segment, flow, kind, sealed });
}

function checkRow(step: number, row: CheckpointRow): void {
  if (!Number.isSafeInteger(step) || step < 0) throw new InvalidInput(`step must be a whole number ≥ 0, not ${step}.`);
  if (!Number.isSafeInteger(row.segment) || row.segment < 0) {
    throw new InvalidInput(`segment must be a whole number ≥ 0, not ${row.segment}.`);
  }
}
