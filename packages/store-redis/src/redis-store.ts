import { createHash } from "node:crypto";
import {
  CheckpointConflict,
  CheckpointNotFound,
  CheckpointStoreCorrupt,
  DurableError,
  InvalidInput,
  StoreUnavailable,
  type CheckpointRow,
  type CheckpointStore,
  type RunKind,
  type RunStatus,
  type StoredCall,
  type StoredCheckpoint,
} from "@durable/core";
import { SCRIPTS, type Script } from "./scripts.js";

/** What the store needs of a node-redis client (`createClient()` gives it). */
export interface RedisLikeClient {
  connect(): Promise<unknown>;
  close(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): unknown;
  readonly isOpen: boolean;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  hGetAll(key: string): Promise<Record<string, string>>;
}

/** Options of `RedisCheckpointStore`. */
export interface RedisStoreOptions {
  /** Keys of this store start from it: one prefix per tenant. Any string; default `"durable"`. */
  readonly prefix?: string;
  /** Every key of a run expires this long after the run's last write, except while it is paused. 0 or unset: never. */
  readonly ttlSeconds?: number;
  /** How long an operation waits for Redis before `StoreUnavailable`; default 5000 ms. */
  readonly operationTimeoutMs?: number;
}

/** How many hash tags (and index keys) a prefix spreads its runs over: `listUnfinished` reads each. */
export const BUCKETS = 16;
const PAGE = 500;

/**
 * A `CheckpointStore` on Redis, for workers on many hosts. Each operation is
 * one server-side script: compare-and-set `save`, the fenced and numbered
 * `recordCall`, and the per-flow index `listUnfinished` reads (no `KEYS` or
 * `SCAN` anywhere). Every key of a run shares one hash tag.
 */
export class RedisCheckpointStore implements CheckpointStore {
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly #factory: () => RedisLikeClient;
  readonly #timeoutMs: number;
  #client: Promise<RedisLikeClient> | undefined;

  constructor(client: () => RedisLikeClient, options: RedisStoreOptions = {}) {
    if (typeof client !== "function") throw new InvalidInput("RedisCheckpointStore takes a function that makes a client: () => createClient({ url }).");
    const ttl = options.ttlSeconds ?? 0;
    if (!Number.isSafeInteger(ttl) || ttl < 0) throw new InvalidInput(`ttlSeconds must be a whole number ≥ 0, not ${ttl}.`);
    this.#factory = client;
    this.prefix = options.prefix ?? "durable";
    this.ttlSeconds = ttl;
    this.#timeoutMs = options.operationTimeoutMs ?? 5000;
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow): Promise<void> {
    const { status, segment, flow, kind, sealed } = checkpoint;
    const keys = this.#keys(runId);
    const member = `${hex(flow)}:${hex(runId)}`;
    const args = [member, String(step), status, String(segment), flow, kind, sealed, String(this.ttlSeconds)];
    this.#verdict(runId, await this.#eval(SCRIPTS.save, [keys.meta, keys.cps, keys.calls, keys.index], args));
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const keys = this.#keys(runId);
    const reply = (await this.#eval(SCRIPTS.latest, [keys.meta, keys.cps], [])) as [string, string] | null;
    if (reply === null) throw new CheckpointNotFound(runId);
    let row: [RunStatus, number, string, RunKind, string];
    try {
      row = JSON.parse(reply[1]) as typeof row;
    } catch (cause) {
      throw new CheckpointStoreCorrupt(runId, "a stored checkpoint row is not JSON.", { cause });
    }
    const [status, segment, flow, kind, sealed] = row;
    return { runId, step: Number(reply[0]), status, segment: Number(segment), flow, kind, sealed };
  }

  async *listUnfinished(flow: string): AsyncIterable<string> {
    const cursors = new Map<number, string>(Array.from({ length: BUCKETS }, (_, b) => [b, ""]));
    while (cursors.size > 0) {
      const pages = await Promise.all(
        [...cursors].map(async ([bucket, after]) => {
          const tag = this.#tag(bucket);
          const reply = (await this.#eval(SCRIPTS.page, [`${tag}index`], [hex(flow), after, String(PAGE), tag])) as [string, string[], number];
          return { bucket, reply };
        }),
      );
      for (const { bucket, reply } of pages) {
        const [last, members, scanned] = reply;
        for (const member of members) yield unhex(member.slice(member.indexOf(":") + 1));
        if (Number(scanned) < PAGE) cursors.delete(bucket);
        else cursors.set(bucket, last);
      }
    }
  }

  async delete(runId: string): Promise<void> {
    const keys = this.#keys(runId);
    await this.#eval(SCRIPTS.delete, [keys.meta, keys.cps, keys.calls, keys.index], [hex(runId)]);
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    const keys = this.#keys(runId);
    const args = [String(segment), String(seq), sealed, String(this.ttlSeconds)];
    this.#verdict(runId, await this.#eval(SCRIPTS.record, [keys.meta, keys.cps, keys.calls], args));
  }

  async calls(runId: string): Promise<StoredCall[]> {
    const all = await this.#call((client) => client.hGetAll(this.#keys(runId).calls));
    return Object.entries(all)
      .map(([field, sealed]) => {
        const [segment, seq] = field.split(":").map(Number) as [number, number];
        return { runId, segment, seq, sealed };
      })
      .sort((a, b) => a.segment - b.segment || a.seq - b.seq);
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    const open = await client.catch(() => undefined);
    if (open?.isOpen === true) await open.close();
  }

  /** A `SCAN MATCH` glob for every key of a prefix (to list or drop a tenant's keys); the prefix is hex-encoded, so it holds no glob character. */
  static keyPattern(prefix: string): string {
    return `{d.${hex(prefix)}.*`;
  }

  /** The keys of one run: all share the hash tag of the run's bucket. */
  keysOf(runId: string): { meta: string; cps: string; calls: string; index: string } {
    return this.#keys(runId);
  }

  #keys(runId: string) {
    const tag = this.#tag(bucketOf(runId));
    const base = `${tag}${hex(runId)}`;
    return { meta: `${base}:meta`, cps: `${base}:cps`, calls: `${base}:calls`, index: `${tag}index` };
  }

  #tag(bucket: number): string {
    return `{d.${hex(this.prefix)}.${bucket}}`;
  }

  #verdict(runId: string, reply: unknown): void {
    const [verdict, reason] = reply as [string, string | undefined];
    if (verdict === "ok") return;
    if (verdict === "notfound") throw new CheckpointNotFound(runId);
    throw new CheckpointConflict(runId, reason ?? "refused.");
  }

  /** Runs a script by its SHA, loading it once when Redis does not know it. */
  #eval(script: Script, keys: string[], args: string[]): Promise<unknown> {
    return this.#call(async (client) => {
      try {
        return await client.evalSha(script.sha, { keys, arguments: args });
      } catch (error) {
        if (!String((error as Error).message).startsWith("NOSCRIPT")) throw error;
        return await client.eval(script.source, { keys, arguments: args });
      }
    });
  }

  /** One operation, bounded by the timeout; any failure of Redis or the connection is `StoreUnavailable`. */
  async #call<T>(op: (client: RedisLikeClient) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailable(`Redis did not answer within ${this.#timeoutMs} ms; whether the operation was applied is unknown.`)),
        this.#timeoutMs,
      );
    });
    try {
      return await Promise.race([this.#connected().then(op), timeout]);
    } catch (error) {
      if (error instanceof DurableError) throw error;
      throw new StoreUnavailable(`Redis failed: ${(error as Error).message ?? String(error)}; whether the operation was applied is unknown.`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  #connected(): Promise<RedisLikeClient> {
    this.#client ??= (async () => {
      const client = this.#factory();
      // Without a listener, a dropped connection would be an uncaught error; node-redis reconnects by itself.
      client.on("error", () => {});
      await client.connect();
      return client;
    })();
    const pending = this.#client;
    pending.catch(() => {
      if (this.#client === pending) this.#client = undefined;
    });
    return pending;
  }
}

function hex(text: string): string {
  return Buffer.from(text, "utf8").toString("hex");
}

function unhex(text: string): string {
  return Buffer.from(text, "hex").toString("utf8");
}

function bucketOf(runId: string): number {
  return createHash("sha1").update(runId).digest()[0]! % BUCKETS;
}
