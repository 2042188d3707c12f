import { connect, createServer, type Server, type Socket } from "node:net";
import { expect } from "vitest";
import { type CheckpointStore, StoreUnavailable } from "@durable/core";
import { LateTimers } from "./late-timers.js";

/** One client connection and its connection to the server; `silent` drops every byte both ways. */
interface Pair {
  readonly client: Socket;
  readonly server: Socket | undefined;
  silent: boolean;
}

/**
 * A TCP proxy for the stores' fault tests:
 * it forwards to a server until `silence()`, then keeps every connection open
 * and drops every byte both ways, as a server that froze or a network that
 * blackholes packets would. `restore()` forwards new connections again; a
 * silenced connection stays silent (its protocol stream is out of step).
 */
export class BlackholeProxy {
  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  #silent = false;

  private constructor(port: number, host: string) {
    this.#server = createServer((client) => this.#forward(client, port, host));
  }

  /** Listens on a free port of 127.0.0.1 and forwards to `host:port`. */
  static async start(port: number, host = "127.0.0.1"): Promise<BlackholeProxy> {
    const proxy = new BlackholeProxy(port, host);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** The port the proxy listens on. */
  get port(): number {
    return (this.#server.address() as { port: number }).port;
  }

  /** Connections open through the proxy right now. */
  get connections(): number {
    return this.#pairs.size;
  }

  /** From now on every byte of every connection, open or new, is dropped; connections stay open. */
  silence(): void {
    this.#silent = true;
    for (const pair of this.#pairs) pair.silent = true;
  }

  /** New connections are forwarded again; silenced ones stay silent until their client closes them. */
  restore(): void {
    this.#silent = false;
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.server?.destroy();
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #forward(client: Socket, port: number, host: string): void {
    // A connection made while silent never reaches the server.
    const upstream = this.#silent ? undefined : connect(port, host);
    const pair: Pair = { client, server: upstream, silent: this.#silent };
    this.#pairs.add(pair);
    const end = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream?.destroy();
    };
    client.on("data", (bytes) => void (pair.silent || upstream?.write(bytes)));
    upstream?.on("data", (bytes) => void (pair.silent || client.write(bytes)));
    client.on("close", end).on("error", end);
    upstream?.on("close", end).on("error", end);
  }
}

/**
 * The error an operation failed with (undefined if it did not), how long it took, and how late this
 * process ran its timers meanwhile, in ms: a store's deadline cannot fire before the process runs it.
 */
async function failure(
  operation: () => Promise<unknown>,
  timers: LateTimers,
): Promise<{ error: unknown; ms: number; lateMs: number }> {
  const start = performance.now();
  const error = await operation().then(
    () => undefined,
    (e: unknown) => e,
  );
  const end = performance.now();
  await timers.settled();
  return { error, ms: end - start, lateMs: timers.within(start, end) };
}

/** One call of every protocol operation on run "r" (saved at step 0), by name: what a silent network must fail. */
export function everyOperation(store: CheckpointStore): Record<string, () => Promise<unknown>> {
  return {
    save: () => store.save("r", 1, { status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" }),
    latest: () => store.latest("r"),
    listUnfinished: async () => {
      for await (const id of store.listUnfinished("f")) void id;
    },
    claimableListing: async () => {
      for await (const id of store.listUnfinished("f", { claimable: true })) void id;
    },
    recordCall: () => store.recordCall("r", 0, 0, "d1.-.{}"),
    calls: () => store.calls("r"),
    delete: () => store.delete("other"),
    renew: () => store.renew("r", 0, { owner: "w", ms: 1_000 }),
    release: () => store.release("r", 0, "w"),
    leaseOf: () => store.leaseOf("r"),
    // The events capability, where the store has it.
    ...(store.sendEvent === undefined
      ? {}
      : { sendEvent: () => store.sendEvent!("r", { seq: 0, key: "k", sealed: "d1.-.{}" }) }),
    ...(store.inbox === undefined ? {} : { inbox: () => store.inbox!("r") }),
  };
}

/** The writes of `everyOperation`: what a store whose file another connection keeps locked must fail. */
export function writeOperations(store: CheckpointStore): Record<string, () => Promise<unknown>> {
  const { save, recordCall, delete: remove, renew, release, sendEvent } = everyOperation(store);
  return {
    save: save!,
    recordCall: recordCall!,
    delete: remove!,
    renew: renew!,
    release: release!,
    ...(sendEvent === undefined ? {} : { sendEvent }),
  };
}

/** Checks the store works again once the fault is gone: run "r" still at step 0, running, and it takes step 1. */
export async function expectWorksAgain(store: CheckpointStore): Promise<void> {
  const back = await store.latest("r");
  expect([back.step, back.status]).toEqual([0, "running"]);
  await store.save("r", 1, { status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
  expect((await store.latest("r")).step).toBe(1);
}

/**
 * Checks each operation fails with `StoreUnavailable` saying `message`, within `timeoutMs` plus a busy
 * machine's `marginMs`, plus however late this process ran its timers meanwhile (a starved process fires
 * every deadline late). `atOnce` starts them all together, as a worker's runs would; else one after another.
 */
export async function expectEachTimesOut(
  operations: Record<string, () => Promise<unknown>>,
  message: RegExp,
  timeoutMs: number,
  marginMs: number,
  { atOnce = false }: { atOnce?: boolean } = {},
): Promise<void> {
  const timers = new LateTimers();
  const check = async ([name, operation]: [string, () => Promise<unknown>]) => {
    const { error, ms, lateMs } = await failure(operation, timers);
    expect(error, name).toBeInstanceOf(StoreUnavailable);
    expect((error as Error).message, name).toMatch(message);
    expect(ms, `${name}, with timers ${Math.round(lateMs)} ms late meanwhile`).toBeLessThan(
      timeoutMs + marginMs + lateMs,
    );
  };
  try {
    if (atOnce) await Promise.all(Object.entries(operations).map(check));
    else for (const entry of Object.entries(operations)) await check(entry);
  } finally {
    timers.stop();
  }
}
