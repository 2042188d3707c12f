import { createClient } from "redis";
import { afterAll, beforeAll, describe, it } from "vitest";
import type { CheckpointRow } from "@durable/core/store";
import { RedisCheckpointStore } from "../src/index.js";
import { BlackholeProxy, everyOperation, expectEachTimesOut, expectWorksAgain } from "@durable/test-utils/blackhole";
import { OwnRedis } from "./own-server.js";

const TIMEOUT = 2500;
// A busy CI machine may fire the timer late.
const MARGIN = 1000;
const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });

describe("RedisCheckpointStore behind a connection that goes silent", () => {
  let server: OwnRedis;
  let proxy: BlackholeProxy;
  beforeAll(async () => {
    server = await OwnRedis.start();
    proxy = await BlackholeProxy.start(Number(new URL(server.url).port));
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it("fails every operation with StoreUnavailable within operationTimeoutMs, and works again once the network does", async () => {
    const store = new RedisCheckpointStore(() => createClient({ url: `redis://127.0.0.1:${proxy.port}` }), {
      prefix: "blackhole",
      operationTimeoutMs: TIMEOUT,
    });
    await store.save("r", 0, row());
    proxy.silence();
    await expectEachTimesOut(
      everyOperation(store),
      new RegExp(`did not answer within ${TIMEOUT} ms; whether the operation was applied is unknown`),
      TIMEOUT,
      MARGIN,
    );
    proxy.restore();
    await expectWorksAgain(store);
    await store.close();
    // One operation after another, each its whole timeout: 15 of them with the events capability.
  }, 60_000);
  it("operations in flight together when the connection goes silent each fail with StoreUnavailable within the timeout, saying why", async () => {
    const store = new RedisCheckpointStore(() => createClient({ url: `redis://127.0.0.1:${proxy.port}` }), {
      prefix: "blackhole-together",
      operationTimeoutMs: TIMEOUT,
    });
    await store.save("r", 0, row());
    proxy.silence();
    // The first to time out drops the connection; the others, on it, fail with that reason, not the client's
    // ("Disconnects client") nor one that is not so ("the store was closed").
    const why = /^(?!.*(store was closed|Disconnects client)).*(did not answer|dropped)/;
    await expectEachTimesOut(everyOperation(store), why, TIMEOUT, MARGIN, { atOnce: true });
    proxy.restore();
    await expectWorksAgain(store);
    await store.close();
  }, 30_000);
});
