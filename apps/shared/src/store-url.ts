import { tmpdir } from "node:os";
import { join } from "node:path";
import { CheckpointNotFound, type CheckpointStore } from "@durable/core";
import { CommandLineError } from "./command-line-error.js";

/** The demo's own folder in the system's temp folder: the demo makes it; its default store, card log and event log live there. */
export const DEMO_FOLDER = join(tmpdir(), "durable-demo");

/** The default store: a SQLite file in the demo's folder. */
export const DEFAULT_STORE = `sqlite:${join(DEMO_FOLDER, "runs.db")}`;

/** The key the demo's workers (and the viewer) seal and verify with: `DURABLE_KEY`, or a fixed one for the demo. */
export const DEMO_KEY = process.env["DURABLE_KEY"] ?? "demo-key-replace-with-32-random-bytes!";

const SCHEMES = "sqlite:<path>, redis://host:port or postgresql://user@host:port/database";

/**
 * Opens the store a `--store` URL names and checks it answers: `sqlite:<path>`,
 * `redis://…` (key prefix `durable-demo`) or `postgresql://…` (tables
 * `durable_demo_*`, made on first use). Only that store's package is loaded.
 */
export async function openStore(url: string): Promise<CheckpointStore> {
  const store = await storeFor(url);
  try {
    await store.latest("durable-demo-probe");
  } catch (error) {
    if (!(error instanceof CheckpointNotFound)) {
      await store.close().catch(() => {});
      throw unreachable(url, error);
    }
  }
  return store;
}

async function storeFor(url: string): Promise<CheckpointStore> {
  if (url.startsWith("sqlite:")) {
    const { SQLiteCheckpointStore } = await import("@durable/store-sqlite");
    try {
      return new SQLiteCheckpointStore(url.slice("sqlite:".length));
    } catch (error) {
      throw unreachable(url, error, "give a path in a folder that exists");
    }
  }
  if (url.startsWith("redis://") || url.startsWith("rediss://")) {
    const [{ RedisCheckpointStore }, { createClient }] = await Promise.all([
      import("@durable/store-redis"),
      import("redis"),
    ]);
    const client = () => createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 3000 } });
    return new RedisCheckpointStore(client, {
      prefix: "durable-demo",
      ttlSeconds: 24 * 3600,
      operationTimeoutMs: 3000,
    });
  }
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
    const { PrismaCheckpointStore } = await import("@durable/store-prisma");
    const store = new PrismaCheckpointStore(url, { tablePrefix: "durable_demo_" });
    try {
      await store.migrate();
    } catch (error) {
      await store.close().catch(() => {});
      throw unreachable(url, error);
    }
    return store;
  }
  throw new CommandLineError(`--store ${JSON.stringify(url)} names no store this knows: use ${SCHEMES}.`);
}

function unreachable(url: string, error: unknown, todo = "start that server"): CommandLineError {
  const [line = ""] = (error instanceof Error ? error.message : String(error)).split("\n");
  const reason = line.trim() || "no answer";
  // Another store to try, never the one that just failed.
  const other = url === DEFAULT_STORE ? "" : `, or pick another store, e.g. --store ${DEFAULT_STORE}`;
  return new CommandLineError(`--store ${url} does not answer (${reason}): ${todo}${other}.`);
}

/** Where the demo writes both workers' events (JSON Lines): beside a SQLite store, else beside the default one. */
export function eventLogFor(url: string): string {
  return `${baseFor(url)}.events.jsonl`;
}

/** Where the demo's card processor logs its charges. */
export function cardLogFor(url: string): string {
  return `${baseFor(url)}.cards.jsonl`;
}

function baseFor(url: string): string {
  return (url.startsWith("sqlite:") ? url : DEFAULT_STORE).slice("sqlite:".length);
}
