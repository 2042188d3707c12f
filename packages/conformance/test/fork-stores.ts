import type { StoredCheckpoint } from "@durable/core/store";
import type { ConformanceInitializer } from "../src/index.js";
import { broken, ForkedMemoryStore } from "./broken-stores.js";

/**
 * A store that breaks what the kit's fork group guards, as a store author
 * could by mistake: a fork of the memory store with ONE bug.
 */

/** Reads history by the run id as an unescaped LIKE pattern: `_` stands for any character, so one run's history holds another's rows. */
class HistoryByPattern extends ForkedMemoryStore {
  override async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    const pattern = new RegExp(`^${runId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("_", ".")}$`, "u");
    const ids = [...this.data.keys()].filter((id) => pattern.test(id));
    const rows = await Promise.all(ids.map((id) => super.history(id, from)));
    return rows.flat().sort((a, b) => a.step - b.step);
  }
}

export const historyByPattern: ConformanceInitializer = broken(
  "reads history by an unescaped LIKE pattern",
  () => new HistoryByPattern(),
);
