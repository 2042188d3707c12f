import { createHash } from "node:crypto";
import { InvalidInput } from "@durable/core/store";

/**
 * What a prefix may hold: letters, digits and `_ . : -`, 1 to 64 of them. No
 * glob character (`* ? [ ] \`), so the prefix goes as it is into `SCAN MATCH`
 * and ACL key patterns; no `{` or `}`, so the store's hash tag is the first
 * one in every key; no space or control character.
 */
export const PREFIX_PATTERN: RegExp = /^[A-Za-z0-9_.:-]{1,64}$/;

/** How many hash tags (and index keys) a prefix spreads its runs over: `listUnfinished` reads each. */
export const BUCKETS = 16;

/**
 * The version of a bucket's indexes, kept in its `schema` key. Absent: written
 * before leases, so its `claimable` index may lack running runs until a
 * claimable listing backfills it and sets this.
 */
export const INDEX_VERSION = "2";

/** Digits of a lease expiry in a `claimable` member: ms since the epoch up to 2^53, zero-padded so they sort as numbers. */
export const EXPIRY_DIGITS = 16;

/** The keys of one run, all under one hash tag. */
export interface RunKeys {
  /** HASH: flow, kind, step, status, segment, segcalls, owner and expires (while leased), decision ("1" while it waits for one), parts (how many parts its stream holds, once it has one). */
  readonly meta: string;
  /** HASH: step → JSON checkpoint row. */
  readonly cps: string;
  /** HASH: "segment:seq" → sealed call record. */
  readonly calls: string;
  /** LIST: the run's inbox, JSON [key, sealed] of each event, its index its seq. */
  readonly inbox: string;
  /** HASH: an event's idempotency key → its seq, for each event of the inbox. */
  readonly inboxByKey: string;
  /** ZSET: the run's stream, JSON [segment, offset, count, sealed] of each batch, scored by its offset. */
  readonly stream: string;
  /** ZSET of the bucket: "<hex flow>:<hex run id>" of every unfinished run. */
  readonly unfinished: string;
  /** ZSET of the bucket: the unfinished runs that expire, scored by when (ms since the epoch). */
  readonly expiring: string;
  /** ZSET of the bucket (score 0): "<hex flow>:<lease expiry, 0 when released>:<hex run id>" of every running run that waits for no decision. */
  readonly claimable: string;
  /** HASH of the bucket: index member → the run's `claimable` member, to move or drop it. */
  readonly claimableOf: string;
  /** STRING of the bucket: the version of its indexes (`INDEX_VERSION`), absent before leases. */
  readonly schema: string;
  /** ZSET of the bucket: "<hex run id>" of every run, scored by when its latest checkpoint was saved (ms): the inspection listing. */
  readonly recent: string;
}

/** Checks a prefix option, naming it in the error. */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix === "string" && PREFIX_PATTERN.test(prefix)) return prefix;
  throw new InvalidInput(
    `prefix must be 1 to 64 letters, digits or _ . : - (${PREFIX_PATTERN.source}), not ${JSON.stringify(prefix)}; pick one per tenant, such as "app:tenant-a".`,
  );
}

/** The `SCAN MATCH` / ACL glob of every key of a (checked) prefix, and of no other prefix's. */
export function keyPattern(prefix: string): string {
  return `${prefix}:{*`;
}

/** The start of every key of a bucket: the prefix, then the hash tag that keeps the bucket on one cluster slot. */
function bucketBase(prefix: string, bucket: number): string {
  return `${prefix}:{${prefix}.${bucket}}:`;
}

/** The keys of a run: its bucket comes from a hash of the run id; the id is hex-encoded, so no character of it reaches another key. */
export function runKeys(prefix: string, runId: string): RunKeys {
  const bucket = bucketOf(runId);
  const run = `${bucketBase(prefix, bucket)}${hex(runId)}`;
  return {
    meta: `${run}:meta`,
    cps: `${run}:cps`,
    calls: `${run}:calls`,
    inbox: `${run}:inbox`,
    inboxByKey: `${run}:inbox-by-key`,
    stream: `${run}:stream`,
    ...indexKeys(prefix, bucket),
  };
}

/**
 * The KEYS of the scripts that write a run (write, send, append, renew,
 * delete), in the order they number them: meta cps calls unfinished expiring
 * claimable claimable-of recent inbox inbox-by-key stream.
 */
export function scriptKeys(keys: RunKeys): string[] {
  const { meta, cps, calls, unfinished, expiring, claimable, claimableOf, recent, inbox, inboxByKey, stream } = keys;
  return [meta, cps, calls, unfinished, expiring, claimable, claimableOf, recent, inbox, inboxByKey, stream];
}

/** The index keys of a bucket. */
export type IndexKeys = Pick<RunKeys, "unfinished" | "expiring" | "claimable" | "claimableOf" | "schema" | "recent">;

/** The index keys of a bucket. */
export function indexKeys(prefix: string, bucket: number): IndexKeys {
  const base = bucketBase(prefix, bucket);
  return {
    unfinished: `${base}unfinished`,
    expiring: `${base}expiring`,
    claimable: `${base}claimable`,
    claimableOf: `${base}claimable-of`,
    schema: `${base}schema`,
    recent: `${base}recent`,
  };
}

/** The index member of a run: flows sort together, so a flow's runs are one lexicographic range. */
export function indexMember(flow: string, runId: string): string {
  return `${hex(flow)}:${hex(runId)}`;
}

/** The run id of an index member. */
export function runIdOf(member: string): string {
  return unhex(member.slice(member.indexOf(":") + 1));
}

/**
 * The keys of one queue, all under the queue's own hash tag (`{<prefix>.q.<hex queue>}`), so each queue
 * script runs on one cluster slot, whichever buckets its runs are in (see queue-scripts.ts).
 */
export interface QueueKeys {
  /** ZSET (score 0) of the queue's runs that may be claimable, "<inverted priority>:<order>:<hex run id>": its order is the queue's. */
  readonly ready: string;
  /** HASH: hex run id → its member in `ready`. */
  readonly readyOf: string;
  /** HASH: hex run id → the highest step of a write it was put in `ready` for (a drop of an earlier write's leaves it). */
  readonly steps: string;
  /** STRING: the queue's counter, for FIFO order and start ids. */
  readonly order: string;
  /** ZSET: "<hex run id>:<owner>" of each slot reservation, scored by when it expires (ms, the queue's clock). */
  readonly slots: string;
  /** ZSET: the queue's accepted starts (ids from `order`), scored by when (ms). */
  readonly starts: string;
  /** ZSET: the reservations of one concurrency key, as `slots` (the key of a run of no key is never written). */
  readonly keySlots: string;
}

/** The keys of a queue, with those of the concurrency key `key` (none: a key of the tag that is never written). */
export function queueKeys(prefix: string, queue: string, key?: string): QueueKeys {
  const base = `${prefix}:{${prefix}.q.${hex(queue)}}:`;
  return {
    ready: `${base}ready`,
    readyOf: `${base}ready-of`,
    steps: `${base}steps`,
    order: `${base}order`,
    slots: `${base}slots`,
    starts: `${base}starts`,
    keySlots: `${base}key:${key === undefined ? "" : hex(key)}`,
  };
}

/** The KEYS of the queue scripts, in the order they number them: ready ready-of steps order slots starts key-slots. */
export function queueScriptKeys(keys: QueueKeys): string[] {
  const { ready, readyOf, steps, order, slots, starts, keySlots } = keys;
  return [ready, readyOf, steps, order, slots, starts, keySlots];
}

export function hex(text: string): string {
  return Buffer.from(text, "utf8").toString("hex");
}

export function unhex(text: string): string {
  return Buffer.from(text, "hex").toString("utf8");
}

/** The bucket of a run: which of the prefix's hash tags its keys are under. */
export function bucketOf(runId: string): number {
  return createHash("sha1").update(runId).digest().readUInt8(0) % BUCKETS;
}
