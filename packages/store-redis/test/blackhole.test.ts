import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailable, type CheckpointRow } from "@durable/core";
import { RedisCheckpointStore } from "../src/index.js";
import { BlackholeProxy, failure } from "./blackhole.js";
import { OwnRedis } from "./own-server.js";

const TIMEOUT = 1500;
// A busy CI machine may fire the timer late.
const MARGIN = 1000;
const row = (): CheckpointRow => ({ status: "running", segment: 0, flow: "f", kind: "flow", sealed: "d1.-.{}" });

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
    const store = new RedisCheckpointStore(() => createClient({ url: `redis://127.0.0.1:${proxy.port}` }), { prefix: "blackhole", operationTimeoutMs: TIMEOUT });
    await store.save("r", 0, row());
    proxy.silence();
    const operations: Record<string, () => Promise<unknown>> = {
      save: () => store.save("r", 1, row()),
      latest: () => store.latest("r"),
      listUnfinished: async () => {
        for await (const id of store.listUnfinished("f")) void id;
      },
      recordCall: () => store.recordCall("r", 0, 0, "d1.-.{}"),
      calls: () => store.calls("r"),
      delete: () => store.delete("other"),
    };
    for (const [name, operation] of Object.entries(operations)) {
      const { error, ms } = await failure(operation);
      expect(error, name).toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message, name).toMatch(/did not answer within 1500 ms; whether the operation was applied is unknown/);
      expect(ms, name).toBeLessThan(TIMEOUT + MARGIN);
    }
    proxy.restore();
    const back = await store.latest("r");
    expect([back.step, back.status]).toEqual([0, "running"]);
    await store.save("r", 1, row());
    expect((await store.latest("r")).step).toBe(1);
    await store.close();
  }, 30_000);
});
