import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointStore } from "@durable/core";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

/** The default store: a SQLite file in the system's temp folder. */
export const DEFAULT_STORE = `sqlite:${join(tmpdir(), "durable-demo", "runs.db")}`;

/** Opens the store a `--store` URL names: `sqlite:<path>`. */
export function openStore(url: string): CheckpointStore {
  if (url.startsWith("sqlite:")) return new SQLiteCheckpointStore(url.slice("sqlite:".length));
  throw new Error(`--store ${url}: use sqlite:<path>.`);
}
