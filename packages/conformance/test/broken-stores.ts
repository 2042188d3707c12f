import { CheckpointConflict, type CheckpointRow, type StoredCall } from "@durable/core";
import type { ConformanceInitializer } from "../src/index.js";
import { MemoryCheckpointStore, type MemoryData, type MemoryRun } from "../../store-memory/src/index.js";
import memory from "../../store-memory/test/conformance.js";

/**
 * Stores that each break one promise of the protocol. The kit's own tests run
 * its groups against them: a kit that passes a broken store is worth nothing.
 */

/** Accepts every save: a lost compare-and-set, so two workers both "win" a step. */
class NoCompareAndSet extends MemoryCheckpointStore {
  readonly #data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.#data = data;
  }
  override async save(runId: string, step: number, row: CheckpointRow): Promise<void> {
    try {
      await super.save(runId, step, row);
    } catch (error) {
      if (!(error instanceof CheckpointConflict)) throw error;
      const entry: MemoryRun = this.#data.get(runId) ?? { checkpoints: [], calls: [], counts: new Map() };
      this.#data.set(runId, entry);
      entry.checkpoints.push({ runId, step, ...row });
    }
  }
}

/** Takes call records from any segment: a cut-off worker is not fenced. */
class NoFencing extends MemoryCheckpointStore {
  readonly #data: MemoryData;
  constructor(data: MemoryData = new Map()) {
    super({ data });
    this.#data = data;
  }
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const entry = this.#data.get(runId);
    const latest = entry?.checkpoints.at(-1);
    if (entry !== undefined && latest !== undefined && segment < latest.segment) {
      entry.calls.push({ runId, segment, seq, sealed });
      return;
    }
    await super.recordCall(runId, segment, seq, sealed);
  }
}

/** Loses the newest call record on every read. */
class DropsLastRecord extends MemoryCheckpointStore {
  override async calls(runId: string): Promise<StoredCall[]> {
    return (await super.calls(runId)).slice(0, -1);
  }
}

/** Returns call records newest first. */
class ReordersRecords extends MemoryCheckpointStore {
  override async calls(runId: string): Promise<StoredCall[]> {
    return (await super.calls(runId)).reverse();
  }
}

const shared: MemoryData = new Map();

function broken<S extends MemoryCheckpointStore>(name: string, create: () => S): ConformanceInitializer<S> {
  return { name, createStore: create };
}

export const noCompareAndSet: ConformanceInitializer = broken("no compare-and-set", () => new NoCompareAndSet());
export const noFencing: ConformanceInitializer = broken("no fencing", () => new NoFencing());
export const dropsLastRecord: ConformanceInitializer = broken("drops the last record", () => new DropsLastRecord());
export const reordersRecords: ConformanceInitializer = broken("reorders records", () => new ReordersRecords());
/** Every store it makes shares one data set, as a store that ignores its prefix would. */
export const ignoresPrefix: ConformanceInitializer = broken("ignores its prefix", () => new MemoryCheckpointStore({ data: shared }));

export { memory };
