import { closedWhileUsed, DurableError, type StoreOperation, StoreUnavailable } from "@durable/core/store";
import type { RedisLike } from "./client.js";
import { Connection } from "./connection.js";
import type { DurabilityCheck } from "./durability.js";
import { describe, isMalformedKeys, malformedKeys } from "./errors.js";
import type { ReplicaWait } from "./replication.js";
import { untilRun } from "./retry.js";
import type { Script } from "./scripts.js";

/**
 * How the store reaches Redis: one connection at a time (made by the
 * store's client factory, replaced once it gave up or went silent), each
 * operation bounded by the timeout, its failures named as the protocol's
 * errors, and nothing after `close()`.
 */
export class Operations {
  readonly #factory: () => RedisLike;
  readonly #timeoutMs: number;
  readonly #durability: DurabilityCheck;
  readonly #replicas: ReplicaWait | undefined;
  #connection: Connection | undefined;
  #closing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(factory: () => RedisLike, timeoutMs: number, durability: DurabilityCheck, replicas?: ReplicaWait) {
    this.#factory = factory;
    this.#timeoutMs = timeoutMs;
    this.#durability = durability;
    this.#replicas = replicas;
  }

  /** Closes the client within the timeout, whatever its state (see `RedisCheckpointStore.close`); harmless twice. */
  async close(): Promise<void> {
    this.#closed = true;
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection !== undefined) this.#closing = connection.close(this.#timeoutMs);
    await this.#closing;
  }

  /**
   * Runs a script by its SHA, loading it once when Redis does not know it (on
   * a cluster, each master learns it on its first call); again while Redis
   * says it did not run it (a slot migrating, a failover under way); then,
   * with `replicas`, waits for the replicas of a script that may write.
   * `runId`: the run whose keys it reads, named when they hold another shape.
   */
  eval(operation: StoreOperation, script: Script, keys: string[], args: string[]): Promise<unknown> {
    const options = { keys, arguments: args };
    return this.call(operation, async (client, deadline) => {
      const reply = await untilRun(async () => {
        try {
          return await client.evalSha(script.sha, options);
        } catch (error) {
          if (!String((error as Error).message).startsWith("NOSCRIPT")) throw error;
          return await client.eval(script.source, options);
        }
      }, deadline);
      if (script.writes && this.#replicas !== undefined) await this.#replicas.after(client, keys[0] ?? "", deadline);
      return reply;
    });
  }

  /**
   * One operation, bounded by the timeout; any failure of Redis or the
   * connection is `StoreUnavailable`, with the client's last connection error
   * as the cause of a timeout. Once the store is closed, an operation fails
   * saying so (naming its run), and connects nothing again. A key of the run
   * of another type, or a script that failed on what the keys hold, is
   * `CheckpointStoreCorrupt` naming the run: retrying it would fail the same way forever.
   */
  async call<T>(operation: StoreOperation, op: (client: RedisLike, deadline: number) => Promise<T>): Promise<T> {
    if (this.#closed) throw closedWhileUsed(operation);
    const deadline = Date.now() + this.#timeoutMs;
    let connection: Connection | undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const cause = connection?.lastError;
        const why = cause === undefined ? "" : ` (last connection error: ${describe(cause)})`;
        reject(
          new StoreUnavailable(
            `Redis did not answer within ${this.#timeoutMs} ms${why}; whether the operation was applied is unknown.`,
            { cause },
          ),
        );
        // A connection that went silent stays silent: the next operation makes a new one.
        if (connection !== undefined) this.#abandon(connection);
      }, this.#timeoutMs);
    });
    try {
      connection = this.#connected();
      const ready = connection.ready().then(async (client) => {
        await this.#durability.check(client);
        return client;
      });
      return await Promise.race([ready.then((client) => op(client, deadline)), timeout]);
    } catch (error) {
      // Closed while the operation waited: why it failed, rather than the client's words for it.
      if (this.#closed) throw closedWhileUsed(operation, error);
      if (error instanceof DurableError) throw error;
      if (operation.runId !== undefined && isMalformedKeys(error)) throw malformedKeys(operation.runId, error);
      // On a connection the store dropped, the client's own error ("Disconnects client") says less than why.
      const why = connection?.usable === false && connection.lastError !== undefined ? connection.lastError : error;
      throw new StoreUnavailable(`Redis failed: ${describe(why)}; whether the operation was applied is unknown.`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops a connection that did not answer in time (its commands fail); the next operation connects anew. */
  #abandon(connection: Connection): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    void connection.close(0, "an operation on the same connection did not answer in time, and it was dropped.");
  }

  /** The current connection; a closed or given-up one is replaced. */
  #connected(): Connection {
    if (this.#connection?.usable !== true) {
      void this.#connection?.close(this.#timeoutMs, "the connection was lost, and replaced.");
      this.#connection = new Connection(this.#factory);
    }
    return this.#connection;
  }
}
