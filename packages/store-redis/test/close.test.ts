import { createClient } from "redis";
import { afterEach, describe, expect, it } from "vitest";
import { CheckpointNotFound, type CheckpointRow, StoreUnavailable } from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { freePort } from "@durable/test-utils/net";
import { exitAfterClose } from "./exit-after-close.js";
import { OwnRedis } from "./own-server.js";

const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
// Long enough that a busy CI machine connects and runs a script in time; the checks below add a margin to it.
const TIMEOUT = 1500;
const MARGIN = 400;

/** Resolves to how long `promise` took, or rejects once it took longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<number> {
  const start = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
  return Date.now() - start;
}

const storeAt = (url: string, operationTimeoutMs = TIMEOUT) =>
  new RedisCheckpointStore(() => createClient({ url }), { prefix: "close-test", operationTimeoutMs });

describe("RedisCheckpointStore against a Redis that never answered", () => {
  it("fails an operation after the timeout with the connection error as cause, and closes within the timeout", async () => {
    const store = storeAt(`redis://127.0.0.1:${await freePort()}`);
    const error = await store.save("r", 0, row()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).cause).toMatchObject({ code: "ECONNREFUSED" });
    expect((error as StoreUnavailable).message).toMatch(/ECONNREFUSED/);
    await within(TIMEOUT + MARGIN, store.close());
    await within(MARGIN, store.close());
  });

  it("closes while an operation still waits for the connection, which then fails", async () => {
    const store = storeAt(`redis://127.0.0.1:${await freePort()}`);
    const pending = store.latest("r").then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 50));
    await within(TIMEOUT + MARGIN, store.close());
    expect(await pending).toBeInstanceOf(StoreUnavailable);
  });

  it("lets the process exit after close", async () => {
    // A client still retrying keeps no timer beyond its current backoff (≤ 2.2 s).
    const script = `
      import { createClient } from "redis";
      import { RedisCheckpointStore } from "./dist/index.js";
      const store = new RedisCheckpointStore(() => createClient({ url: "redis://127.0.0.1:${await freePort()}" }), { operationTimeoutMs: ${TIMEOUT} });
      await store.latest("r").catch(() => {});
      await store.close();
      console.log("closed");`;
    const { code, lingeredMs } = await exitAfterClose(script, 2_200 + 4 * MARGIN);
    expect(code).toBe(0);
    expect(lingeredMs).toBeLessThan(2_200 + 4 * MARGIN);
  });

  it("gives StoreUnavailable, with the cause, when the client factory throws", async () => {
    const store = new RedisCheckpointStore(() => {
      throw new Error("no client today");
    });
    const error = await store.latest("r").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).cause).toMatchObject({ message: "no client today" });
    await within(MARGIN, store.close());
  });

  it("closes a store that never ran an operation, twice", async () => {
    const store = storeAt(`redis://127.0.0.1:${await freePort()}`);
    await within(MARGIN, store.close());
    await within(MARGIN, store.close());
  });
});

describe("RedisCheckpointStore when its Redis stops", () => {
  let server: OwnRedis | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("closes while connected, twice, and concurrently", async () => {
    server = await OwnRedis.start();
    const store = storeAt(server.url);
    await store.save("r", 0, row());
    await within(TIMEOUT + MARGIN, Promise.all([store.close(), store.close()]));
    await within(MARGIN, store.close());
  });

  it("fails operations while reconnecting with the connection error as cause, and closes within the timeout", async () => {
    server = await OwnRedis.start();
    const url = server.url;
    const store = storeAt(url);
    await store.save("r", 0, row());
    await server.stop();
    const error = await store.save("r", 1, row()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).cause).toBeInstanceOf(Error);
    await within(TIMEOUT + MARGIN, store.close());
    await within(MARGIN, store.close());
  });

  it("reconnects by itself once the server is back", async () => {
    server = await OwnRedis.start();
    const port = Number(new URL(server.url).port);
    const store = storeAt(server.url);
    await store.save("r", 0, row());
    await server.stop();
    await expect(store.latest("r")).rejects.toThrow(StoreUnavailable);
    server = await OwnRedis.start(port);
    // node-redis retries with a backoff of up to about 2 s; the fresh server holds nothing, which only an answer can say.
    const deadline = Date.now() + 5000;
    for (;;) {
      const error = await store.latest("r").then(
        () => undefined,
        (e: unknown) => e,
      );
      if (error instanceof CheckpointNotFound) break;
      if (Date.now() > deadline) throw error;
    }
    await store.save("r", 0, row());
    await within(TIMEOUT + MARGIN, store.close());
  });

  it("a store closed while a run still uses it says so, naming the run and the operation, and connects nothing again", async () => {
    server = await OwnRedis.start();
    const url = server.url;
    let clients = 0;
    const store = new RedisCheckpointStore(
      () => {
        clients += 1;
        return createClient({ url });
      },
      { prefix: "close-test", operationTimeoutMs: TIMEOUT },
    );
    await store.save("order-7", 0, row());
    await store.close();
    for (const [what, use] of [
      ["save", () => store.save("order-7", 1, row())],
      ["latest", () => store.latest("order-7")],
      ["recordCall", () => store.recordCall("order-7", 0, 0, "d1.-.{}")],
      ["release", () => store.release("order-7", 0, "me")],
      ["appendStream", () => store.appendStream("order-7", { segment: 0, offset: 0, count: 1, sealed: "d1.-.{}" })],
      ["stream", () => store.stream("order-7")],
      ["dropStream", () => store.dropStream("order-7")],
    ] as const) {
      const error: unknown = await use().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message).toBe(
        `The store was closed while run "order-7" was using it (${what} after close()): stop what uses a store (await worker.stop()) before closing it.`,
      );
    }
    expect(clients).toBe(1);
  });
});
