import { createClient } from "redis";
import { serverAnswers } from "./services.js";

/** The Redis server the tests share: `REDIS_URL`, or the local one. */
export const REDIS_URL = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";

/** Whether Redis answers at `REDIS_URL`; in CI a missing server fails loudly, locally the tests are skipped. */
export function redisAnswers(): Promise<boolean> {
  const probe = async () => {
    const error = await pingFails(REDIS_URL, 2000);
    if (error !== undefined) throw error;
  };
  return serverAnswers("Redis", REDIS_URL, probe, "redis-server --daemonize yes --port 6379");
}

/** Undefined when a Redis at `url` answers PING within `connectTimeout` ms; otherwise why not. */
export async function pingFails(url: string, connectTimeout: number): Promise<unknown> {
  const probe = createClient({ url, socket: { reconnectStrategy: false, connectTimeout } });
  probe.on("error", () => {});
  try {
    await probe.connect();
    await probe.ping();
    await probe.close();
    return undefined;
  } catch (error) {
    return error ?? new Error("no answer");
  }
}

/** A connection of its own to `url` (by default `REDIS_URL`), past any store: for setting up and checking tests. */
export async function redisAdmin(url: string = REDIS_URL) {
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** Removes every key matching `pattern` on `url` (cleanup only: it scans). */
export async function dropKeys(pattern: string, url: string = REDIS_URL): Promise<void> {
  const client = await redisAdmin(url);
  try {
    for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 }))
      if (keys.length > 0) await client.del(keys);
  } finally {
    await client.close();
  }
}
