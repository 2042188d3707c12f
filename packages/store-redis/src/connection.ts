import { isCluster, type RedisLike } from "./client.js";

/** The events both kinds of client emit that the store listens to. */
interface Events {
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "connect", listener: () => void): unknown;
}

/**
 * One client of the store, from connect to close. The client reconnects by
 * itself (its `socket.reconnectStrategy`); commands are sent only while it is
 * ready, so none waits in its offline queue to be applied long after the
 * store gave up on it. The last connection error is kept as the reason a
 * timed-out operation gives.
 */
export class Connection {
  readonly #client: RedisLike;
  #lastError: unknown;
  #closed = false;
  /** Pending while the client is not ready; shared by every operation waiting for it. */
  #waiting: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } | undefined;

  constructor(factory: () => RedisLike) {
    const client = factory();
    this.#client = client;
    const events: Events = client;
    // An 'error' listener is required (without one, a dropped connection is an uncaught error); node-redis reconnects by itself.
    events.on("error", (error) => {
      this.#lastError = error;
    });
    // A cluster is ready at 'connect' (its slots are known); a one-node client at 'ready', after 'connect'.
    const ready = () => {
      if (!client.isReady) return;
      this.#lastError = undefined;
      this.#waiting?.resolve();
      this.#waiting = undefined;
    };
    events.on("connect", ready);
    if (!isCluster(client)) {
      client.on("ready", ready);
      client.on("terminated", (error) => this.#giveUp(error));
    }
    // It rejects once the reconnect strategy gives up, or on close.
    this.#client.connect().catch((error: unknown) => this.#giveUp(this.#lastError ?? error));
  }

  /** The error of the last failed connection attempt or dropped connection, until the client is ready again. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** False once closed or given up: the store then makes a new connection. */
  get usable(): boolean {
    return !this.#closed && this.#client.isOpen;
  }

  /** The client, once it is ready; waits while it connects or reconnects. */
  ready(): Promise<RedisLike> {
    if (this.#client.isReady) return Promise.resolve(this.#client);
    if (!this.usable) return Promise.reject(this.#lastError ?? new Error("the Redis client is closed."));
    if (this.#waiting === undefined) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((ok, fail) => {
        resolve = ok;
        reject = fail;
      });
      promise.catch(() => {});
      this.#waiting = { promise, resolve, reject };
    }
    return this.#waiting.promise.then(() => this.#client);
  }

  /**
   * Closes the client whatever its state: a ready one gracefully, for at most
   * `timeoutMs`, then forcefully; one that is connecting or reconnecting at
   * once. Operations still waiting for it fail saying `why`. Never rejects.
   */
  async close(timeoutMs: number, why = "the store was closed."): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#giveUp(new Error(why));
    if (this.#client.isReady) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), timeoutMs);
      });
      const closed = await Promise.race([
        this.#client.close().then(
          () => "closed" as const,
          () => "late" as const,
        ),
        late,
      ]);
      clearTimeout(timer);
      if (closed === "closed") return;
    }
    this.#client.destroy();
  }

  #giveUp(error: unknown): void {
    this.#lastError ??= error;
    this.#waiting?.reject(error);
    this.#waiting = undefined;
  }
}
