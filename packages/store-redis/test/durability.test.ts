import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type CheckpointRow, InvalidInput, StoreNotReady, StoreUnavailable } from "@durable/core/store";
import { RedisCheckpointStore, type RedisStoreOptions } from "../src/index.js";
import { OwnRedis } from "./own-server.js";

const row = (): CheckpointRow => ({ status: "running", segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
const AOF_ALWAYS = ["--save", "", "--appendonly", "yes", "--appendfsync", "always"];
const AOF_EVERYSEC = ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec"];
const NONE = ["--save", "", "--appendonly", "no"];

const servers: Record<string, OwnRedis> = {};
beforeAll(async () => {
  [servers["always"], servers["everysec"], servers["none"]] = await Promise.all([
    OwnRedis.start(undefined, AOF_ALWAYS),
    OwnRedis.start(undefined, AOF_EVERYSEC),
    OwnRedis.start(undefined, NONE),
  ]);
}, 30_000);
afterAll(async () => {
  await Promise.all(Object.values(servers).map((server) => server.stop()));
});
afterEach(() => vi.restoreAllMocks());

const stores: RedisCheckpointStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
function storeOn(server: OwnRedis, options: RedisStoreOptions = {}, url = server.url): RedisCheckpointStore {
  const store = new RedisCheckpointStore(() => createClient({ url }), { prefix: `durability`, ...options });
  stores.push(store);
  return store;
}

describe("RedisCheckpointStore checks the server's persistence on connect", () => {
  it("says nothing on appendonly yes with appendfsync always, and requireDurable accepts it", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await storeOn(servers["always"]!).save("a", 0, row());
    await storeOn(servers["always"]!, { requireDurable: true }).save("b", 0, row());
    expect(warn).not.toHaveBeenCalled();
  });

  it("warns once, in one line, on a Redis without AOF, and still works", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    for (const id of ["a", "b"]) await storeOn(servers["none"]!).save(id, 0, row());
    expect(warn).toHaveBeenCalledTimes(1);
    const [line] = warn.mock.calls[0] as [string];
    expect(line).toMatch(
      /appendonly no: a restart loses every write since the last RDB snapshot.*set appendonly yes and appendfsync always/,
    );
    expect(line).not.toMatch(/\n/);
  });

  it("requireDurable refuses a Redis with appendfsync everysec, or without AOF, with StoreNotReady naming the setting", async () => {
    const everysec = await storeOn(servers["everysec"]!, { requireDurable: true })
      .latest("r")
      .catch((e: unknown) => e);
    expect(everysec).toBeInstanceOf(StoreNotReady);
    expect((everysec as Error).message).toMatch(
      /appendfsync everysec: a crash .* can lose the last second of acknowledged writes; set appendfsync always/,
    );
    const none = await storeOn(servers["none"]!, { requireDurable: true })
      .save("r", 0, row())
      .catch((e: unknown) => e);
    expect(none).toBeInstanceOf(StoreNotReady);
    expect((none as Error).message).toMatch(/set appendonly yes and appendfsync always/);
    expect((none as Error).message).not.toMatch(/\n/);
  });

  it("skips the check quietly where CONFIG is refused", async () => {
    const admin = createClient({ url: servers["none"]!.url });
    await admin.connect();
    await admin.sendCommand(["ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config"]);
    await admin.close();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const url = servers["none"]!.url.replace("redis://", "redis://noconfig:pw@");
    await storeOn(servers["none"]!, { requireDurable: true }, url).save("acl", 0, row());
    expect(warn).not.toHaveBeenCalled();
  });
});

describe("RedisCheckpointStore's replicas option", () => {
  it("refuses a replicas that is not a whole number ≥ 0 with InvalidInput", () => {
    for (const replicas of [-1, 1.5, Number.NaN, "1" as unknown as number])
      expect(() => new RedisCheckpointStore(() => createClient(), { replicas })).toThrow(InvalidInput);
  });

  it("replicas: 1 on a Redis without a replica: each write applied, then StoreUnavailable saying 0 of 1 replicas have it", async () => {
    const store = storeOn(servers["always"]!, {
      prefix: `replicas-${Date.now()}`,
      replicas: 1,
      // Room for a connect and the write on a busy machine: the WAIT takes half of what is left.
      operationTimeoutMs: 2000,
    });
    const error = await store.save("r", 0, row()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as Error).message).toMatch(/applied, but 0 of 1 replicas acknowledged it within \d+ ms/);
    expect((await store.latest("r")).step).toBe(0);
  });
});
