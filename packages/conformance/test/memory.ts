import type { MemoryData, MemoryRun } from "@durable/core/internal";
import { MemoryCheckpointStore } from "@durable/core";
import type { ConformanceInitializer, RawAccess } from "../src/index.js";

/** The memory store's conformance initializer (kit.test.ts runs every group with it); `durable-conformance test/memory.ts` too. */
const dataOf = new WeakMap<MemoryCheckpointStore, MemoryData>();

function open(data: MemoryData = new Map()): MemoryCheckpointStore {
  const store = new MemoryCheckpointStore({ data });
  dataOf.set(store, data);
  return store;
}

/** The raw oracle over a memory store's rows (also a broken fork's, in broken-stores.ts). */
export function raw(data: MemoryData): RawAccess {
  const run = (runId: string): MemoryRun => {
    const entry = data.get(runId);
    if (entry === undefined) throw new Error(`no run ${runId}`);
    return entry;
  };
  const checkpointAt = (runId: string, step: number) => {
    const index = run(runId).checkpoints.findIndex((c) => c.step === step);
    if (index < 0) throw new Error(`no step ${step} of ${runId}`);
    return index;
  };
  const callAt = (runId: string, segment: number, seq: number) => {
    const index = run(runId).calls.findIndex((c) => c.segment === segment && c.seq === seq);
    if (index < 0) throw new Error(`no call ${segment}/${seq} of ${runId}`);
    return index;
  };
  return {
    async readCheckpoint(runId, step) {
      return run(runId).checkpoints[checkpointAt(runId, step)]!.sealed;
    },
    async writeCheckpoint(runId, step, sealed) {
      const rows = run(runId).checkpoints;
      const index = checkpointAt(runId, step);
      rows[index] = { ...rows[index]!, sealed };
    },
    async deleteCheckpoint(runId, step) {
      run(runId).checkpoints.splice(checkpointAt(runId, step), 1);
    },
    async readCall(runId, segment, seq) {
      return run(runId).calls[callAt(runId, segment, seq)]!.sealed;
    },
    async writeCall(runId, segment, seq, sealed) {
      const calls = run(runId).calls;
      const index = callAt(runId, segment, seq);
      calls[index] = { ...calls[index]!, sealed };
    },
    async deleteCall(runId, segment, seq) {
      run(runId).calls.splice(callAt(runId, segment, seq), 1);
    },
    // The memory store keeps no head apart from its rows: its latest checkpoint is its head.
    async setColumn(row, column, value) {
      if (row.kind === "checkpoint" && ["status", "segment", "name", "kind", "sealed"].includes(column)) {
        const rows = run(row.runId).checkpoints;
        const index = checkpointAt(row.runId, row.step);
        rows[index] = { ...rows[index]!, [column]: value } as (typeof rows)[number];
        return true;
      }
      if (row.kind === "call" && ["segment", "seq", "sealed"].includes(column)) {
        const calls = run(row.runId).calls;
        const index = callAt(row.runId, row.segment, row.seq);
        calls[index] = { ...calls[index]!, [column]: value } as (typeof calls)[number];
        return true;
      }
      return false;
    },
  };
}

const memory: ConformanceInitializer<MemoryCheckpointStore> = {
  name: "memory",
  createStore: () => open(),
  capabilities: {
    connect: async (store) => open(dataOf.get(store)),
    anchor: { opener: new URL("./open-memory-anchor.ts", import.meta.url).href, newHandle: () => "memory" },
  },
  raw: (store) => raw(dataOf.get(store)!),
};

export default memory;
