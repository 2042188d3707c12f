import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  type CheckpointStore,
  checkBatch,
  checkEvent,
  checkLeaseTerms,
  checkQueuePlace,
  InvalidInput,
  type Lease,
  type LeaseClaim,
  type LeaseTerms,
  type LeaseView,
  type ListOptions,
  type QueuedRun,
  renewRefusal,
  type RunPage,
  type RunQuery,
  type RunWrite,
  type StoredCall,
  type CallPosition,
  type StoredCheckpoint,
  type StoredEvent,
  type StoreOperation,
  checkInboxFrom,
  checkStreamBatch,
  checkStreamFrom,
  type StoredStreamBatch,
  type StreamBatch,
} from "@durable/core/store";
import type { RedisLike } from "./client.js";
import { pairs, storedCalls } from "./call-fields.js";
import { corruptOr } from "./errors.js";
import { DurabilityCheck } from "./durability.js";
import { type EventToSend, eventsOf, sendArgs, sentOrRefused } from "./inbox.js";
import { checkPrefix, hex, keyPattern, runKeys, type RunKeys, scriptKeys } from "./keys.js";
import { type Evaluate, listRuns } from "./listing.js";
import { listRecent } from "./inspect.js";
import { refusedHead } from "./lua.js";
import { Operations } from "./operations.js";
import { type RedisStoreOptions, resolveOptions } from "./options.js";
import { renewOutcome, writeOutcome } from "./queue-replies.js";
import { Queues } from "./queues.js";
import { ReplicaWait } from "./replication.js";
import { untilRun } from "./retry.js";
import { SCRIPTS, type Script } from "./scripts.js";
import { appendArgs, appendedOrRefused, batchesOf } from "./stream.js";
import { checkpointOf, writeArgs, writeVerdict } from "./write-script.js";

/**
 * A `CheckpointStore` on Redis, for workers on many hosts. Each operation is
 * one server-side script: compare-and-set `save`, the fenced and numbered
 * `recordCall`, a `commit` of many of them at once, leases by the server's
 * clock (`TIME` inside the script), and the per-flow indexes
 * `listUnfinished` reads (no `KEYS` or `SCAN` anywhere).
 * Every key starts with the prefix; the keys of a run share one hash tag, so
 * the same store runs on one node (`createClient`) or a Redis Cluster
 * (`createCluster`).
 */
export class RedisCheckpointStore implements CheckpointStore {
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly #operations: Operations;
  readonly #queues: Queues;
  /** The last run's keys, as a script takes them: a runner writes one run many times in a row. */
  #last: { readonly runId: string; readonly keys: string[] } | undefined;

  /**
   * `client` makes the store's client: `() => createClient({ url })` for one
   * node, `() => createCluster({ rootNodes })` for a cluster. The store calls
   * it once, and again only after that client gave up or was closed.
   */
  constructor(client: () => RedisLike, options: RedisStoreOptions = {}) {
    if (typeof client !== "function")
      throw new InvalidInput(
        "RedisCheckpointStore takes a function that makes a client: () => createClient({ url }), or () => createCluster({ rootNodes }).",
      );
    const { ttlSeconds, timeoutMs, replicas, clockSkewMs } = resolveOptions(options);
    this.prefix = checkPrefix(options.prefix ?? "durable");
    this.ttlSeconds = ttlSeconds;
    const durability = new DurabilityCheck(options.requireDurable === true);
    const replicaWait = replicas > 0 ? new ReplicaWait(replicas) : undefined;
    this.#operations = new Operations(client, timeoutMs, durability, replicaWait);
    this.#queues = new Queues(this.prefix, clockSkewMs);
  }

  async save(runId: string, step: number, checkpoint: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    checkLeaseTerms(lease);
    checkQueuePlace(checkpoint.queue);
    await this.#write({ what: "save", runId }, [{ kind: "save", step, row: checkpoint, lease }]);
  }

  /** Extends the lease; of a queued run, once its queue reserved the slot for that long (queues.ts). */
  async renew(runId: string, segment: number, terms: LeaseTerms): Promise<Lease> {
    checkLeaseTerms(terms);
    const operation = { what: "renew", runId };
    const args = [String(segment), terms.owner, String(terms.ms), String(this.ttlSeconds), hex(runId)];
    const send = (queue: string[]) =>
      this.#eval(operation, SCRIPTS.renew, this.#all(runId), [...args, ...queue.slice(0, 3)]);
    const write = { runId, owner: terms.owner, ms: terms.ms, holds: true };
    const sent = await this.#queues.write(write, this.#evaluate(operation), send, renewOutcome);
    const reply = corruptOr(runId, sent) as string[];
    if (reply[0] === "ok") return { owner: terms.owner, expiresAt: Number(reply[1]) };
    if (reply[0] === "notfound") throw new CheckpointNotFound(runId);
    // The script refused; the protocol's own rule names why, from what the script read.
    const [owner, expiresAt] = reply.slice(6);
    const held = owner ? { owner, expiresAt: Number(expiresAt) } : undefined;
    throw (
      renewRefusal(runId, segment, terms.owner, refusedHead(reply.slice(1)), held) ??
      new CheckpointConflict(runId, "the lease was not renewed.")
    );
  }

  async release(runId: string, segment: number, owner: string): Promise<void> {
    const { meta, claimable, claimableOf } = this.keysOf(runId);
    const operation = { what: "release", runId };
    const args = [String(segment), owner, hex(runId)];
    const reply = await this.#eval(operation, SCRIPTS.release, [meta, claimable, claimableOf], args);
    await this.#queues.released(runId, this.#evaluate(operation), corruptOr(runId, reply), false);
  }

  async leaseOf(runId: string): Promise<LeaseView | undefined> {
    const operation = { what: "leaseOf", runId };
    const reply = corruptOr(runId, await this.#eval(operation, SCRIPTS.lease, [this.keysOf(runId).meta], [])) as
      | [string, string, string]
      | null;
    if (reply === null) return undefined;
    const [owner, expiresAt, now] = reply;
    return { owner, expiresAt: Number(expiresAt), now: Number(now) };
  }

  async latest(runId: string): Promise<StoredCheckpoint> {
    const keys = this.keysOf(runId);
    const operation = { what: "latest", runId };
    const reply = corruptOr(runId, await this.#eval(operation, SCRIPTS.latest, [keys.meta, keys.cps], [])) as
      | [string, string]
      | null;
    if (reply === null) throw new CheckpointNotFound(runId);
    return checkpointOf(runId, reply[0], reply[1]);
  }

  /**
   * Reads only (but for a one-time backfill of indexes written before
   * leases, on the first claimable listing of each bucket): entries of runs
   * that expired are skipped (a later `save` in their bucket drops them).
   */
  listUnfinished(name: string, options: ListOptions = {}): AsyncIterable<string> {
    return listRuns(this.#evaluate({ what: "listUnfinished" }), this.prefix, name, options.claimable === true);
  }

  async delete(runId: string): Promise<void> {
    const operation = { what: "delete", runId };
    const reply = await this.#eval(operation, SCRIPTS.delete, this.#all(runId), [hex(runId)]);
    await this.#queues.released(runId, this.#evaluate(operation), reply, true);
  }

  /**
   * The claimable runs of a queue in its order (the queues capability): its
   * ready index a page at a time, each run checked in its bucket. Reads only.
   */
  listQueued(queue: string): AsyncIterable<QueuedRun> {
    return this.#queues.list(queue, this.#evaluate({ what: "listQueued" }));
  }

  async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    await this.#write({ what: "recordCall", runId }, [{ kind: "record", segment, seq, sealed }]);
  }

  /**
   * Applies the writes in order as one atomic commit: one script, one round
   * trip, whatever their number. The script checks them all before it writes
   * any, so a refused batch writes nothing; a write to a run with a TTL
   * refreshes it, as `save` and `recordCall` do.
   */
  async commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    checkBatch(writes);
    await this.#write({ what: "commit", runId }, writes);
  }

  /** Appends an event to the run's inbox (the events capability): one script, which releases a wait's lease (inbox.ts). */
  async sendEvent(runId: string, event: EventToSend): Promise<boolean> {
    checkEvent(event);
    const args = sendArgs(this.ttlSeconds, hex(runId), event);
    const reply = await this.#eval({ what: "sendEvent", runId }, SCRIPTS.send, this.#all(runId), args);
    return sentOrRefused(runId, event.seq, reply);
  }

  /** The run's inbox from event `from` on, by seq (the events capability): one `LRANGE` of its list. */
  async inbox(runId: string, from = 0): Promise<StoredEvent[]> {
    checkInboxFrom(from);
    const key = this.keysOf(runId).inbox;
    const read = (client: RedisLike, deadline: number) => untilRun(() => client.lRange(key, from, -1), deadline);
    return eventsOf(runId, from, await this.#call({ what: "inbox", runId }, read));
  }

  /** Appends a batch to the run's stream (the streams capability): one script over the run's keys (stream.ts). */
  async appendStream(runId: string, batch: StreamBatch): Promise<void> {
    checkStreamBatch(batch);
    const args = appendArgs(this.ttlSeconds, hex(runId), batch);
    const reply = await this.#eval({ what: "appendStream", runId }, SCRIPTS.append, this.#all(runId), args);
    appendedOrRefused(runId, batch, reply);
  }

  /**
   * The batches of the run's stream from the one that holds part `from`, by
   * offset, at most `MAX_STREAM_PAGE` (the streams capability): one script,
   * two range reads of its sorted set.
   */
  async stream(runId: string, from = 0): Promise<StoredStreamBatch[]> {
    checkStreamFrom(from);
    const keys = [this.keysOf(runId).stream];
    return batchesOf(runId, from, await this.#eval({ what: "stream", runId }, SCRIPTS.stream, keys, [String(from)]));
  }

  /** Removes the run's stream and nothing else (the streams capability): one script. */
  async dropStream(runId: string): Promise<void> {
    const { meta, stream } = this.keysOf(runId);
    await this.#eval({ what: "dropStream", runId }, SCRIPTS.dropStream, [meta, stream], []);
  }

  /**
   * A page of runs of any status, newest first (the inspection capability:
   * see `CheckpointStore.listRuns`), from each bucket's `recent` index. Runs
   * last saved before this version are listed once they are saved again.
   */
  listRuns(query?: RunQuery): Promise<RunPage> {
    return listRecent(this.#evaluate({ what: "listRuns" }), this.prefix, query);
  }

  /** Every checkpoint of the run from step `from`, by step (the inspection capability): one script, one round trip. */
  async history(runId: string, from = 0): Promise<StoredCheckpoint[]> {
    const keys = this.keysOf(runId);
    const operation = { what: "history", runId };
    const reply = corruptOr(runId, await this.#eval(operation, SCRIPTS.history, [keys.meta, keys.cps], [String(from)]));
    return pairs(reply as string[]).map(([step, row]) => checkpointOf(runId, step, row));
  }

  /**
   * The run's call records by segment and seq: all of them (HGETALL, so a
   * field of another form is seen and named), or with \`from\` those from there
   * on, read by one script as ranges of the hash (see scripts.ts).
   */
  async calls(runId: string, from?: CallPosition): Promise<StoredCall[]> {
    const keys = this.keysOf(runId);
    const entries =
      from === undefined
        ? Object.entries(
            await this.#call({ what: "calls", runId }, (client, deadline) =>
              untilRun(() => client.hGetAll(keys.calls), deadline),
            ),
          )
        : pairs(
            corruptOr(
              runId,
              await this.#eval(
                { what: "calls", runId },
                SCRIPTS.callsFrom,
                [keys.meta, keys.calls],
                [String(from.segment), String(from.seq)],
              ),
            ) as string[],
          );
    return storedCalls(runId, entries);
  }

  /**
   * Closes the client within `operationTimeoutMs`, whatever its state
   * (connecting, reconnecting, connected, closed); waiting operations fail
   * with `StoreUnavailable`. Calling it again is harmless; an operation after
   * it fails with `StoreUnavailable` saying the store was closed while its
   * run used it, and connects nothing again.
   */
  close(): Promise<void> {
    return this.#operations.close();
  }

  /**
   * The `SCAN MATCH` glob (and ACL key pattern) of every key of a prefix,
   * `<prefix>:{*`: it matches no key of another prefix, even one that starts
   * with this one.
   */
  static keyPattern(prefix: string): string {
    return keyPattern(checkPrefix(prefix));
  }

  /** The keys of one run and of its bucket's indexes: all share one hash tag. */
  keysOf(runId: string): RunKeys {
    return runKeys(this.prefix, runId);
  }

  #all(runId: string): string[] {
    if (this.#last?.runId !== runId) this.#last = { runId, keys: scriptKeys(this.keysOf(runId)) };
    return this.#last.keys;
  }

  /**
   * `save`, `recordCall` and `commit`: the write script, whose refusals are
   * those of the single operations; a batch with a save goes through the
   * run's queue, which may refuse it (`QueueFull`: queues.ts).
   */
  async #write(operation: StoreOperation & { readonly runId: string }, writes: readonly RunWrite[]): Promise<void> {
    const { runId } = operation;
    const send = (queue: readonly string[]) =>
      this.#eval(operation, SCRIPTS.write, this.#all(runId), writeArgs(this.ttlSeconds, hex(runId), writes, queue));
    const save = writes.find((write) => write.kind === "save");
    if (save === undefined) return writeVerdict(runId, await send(NO_QUEUE));
    const { owner = "", ms = 0 } = save.lease ?? {};
    const holds = save.row.status === "running" && ms > 0;
    const write = { runId, step: save.step, place: save.row.queue, owner, ms, holds };
    writeVerdict(runId, await this.#queues.write(write, this.#evaluate(operation), send, writeOutcome));
  }

  /** One script of an operation (operations.ts). */
  #eval(operation: StoreOperation, script: Script, keys: string[], args: string[]): Promise<unknown> {
    return this.#operations.eval(operation, script, keys, args);
  }

  /** One operation of commands of its own (operations.ts). */
  #call<T>(operation: StoreOperation, op: (client: RedisLike, deadline: number) => Promise<T>): Promise<T> {
    return this.#operations.call(operation, op);
  }

  /** The store's scripts for one operation, as the listings and the queues run them. */
  #evaluate(operation: StoreOperation): Evaluate {
    return (script, keys, args) => this.#eval(operation, script, keys, args);
  }
}

/** The queue terms of a write with no save: it touches no queue. */
const NO_QUEUE: readonly string[] = ["", "", "0", "", "", "", "", ""];
