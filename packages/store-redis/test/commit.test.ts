import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type CheckpointRow,
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointStore,
  InvalidInput,
  type LeaseClaim,
  LeaseHeld,
  MAX_BATCH_WRITES,
  type RunWrite,
} from "@durable/core/store";
import { redisAdmin } from "@durable/test-utils/redis";
import { RedisCheckpointStore } from "../src/index.js";
import { indexMember } from "../src/keys.js";
import { OwnRedis } from "./own-server.js";
import { client, dropPrefix, newStore, redisAnswers, row } from "./redis.js";

const record = (segment: number, seq: number, sealed = `call ${segment}:${seq}`): RunWrite => ({
  kind: "record",
  segment,
  seq,
  sealed,
});
const save = (step: number, over: Partial<CheckpointRow> = {}, lease?: LeaseClaim): RunWrite =>
  lease === undefined ? { kind: "save", step, row: row(over) } : { kind: "save", step, row: row(over), lease };
const HOLDER = { owner: "holder", ms: 60_000 };
const CLAIMER = { owner: "claimer", ms: 60_000 };

/** One write as a single operation: what the batch must refuse the same way. */
function single(store: CheckpointStore, runId: string, write: RunWrite): Promise<void> {
  return write.kind === "record"
    ? store.recordCall(runId, write.segment, write.seq, write.sealed)
    : store.save(runId, write.step, write.row, write.lease);
}

async function refusal(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("accepted, not refused");
    },
    (error: unknown) => error as Error,
  );
}

type Admin = Awaited<ReturnType<typeof redisAdmin>>;

/** Every key of the run and of its bucket's indexes, as Redis holds it: type, whether it expires, and its bytes. */
async function rawRun(admin: Admin, store: RedisCheckpointStore, runId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, key] of Object.entries(store.keysOf(runId))) {
    const [type, pttl, dump] = await Promise.all([admin.type(key), admin.pTTL(key), admin.sendCommand(["DUMP", key])]);
    out[name] = `${type} ${pttl < 0 ? pttl : "expires"} ${JSON.stringify(dump)}`;
  }
  return out;
}

/** A refused batch: `at` is the index of the write refused. */
interface Refused {
  readonly name: string;
  readonly setup: (store: CheckpointStore, runId: string) => Promise<void>;
  readonly batch: readonly RunWrite[];
  readonly at: number;
  readonly error: typeof CheckpointConflict | typeof CheckpointNotFound | typeof LeaseHeld;
}

const REFUSED: readonly Refused[] = [
  {
    name: "a bad seq after good records",
    setup: (s, r) => s.save(r, 0, row()),
    batch: [record(0, 0), record(0, 1), record(0, 3)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a duplicate record of another envelope after a good one",
    setup: async (s, r) => {
      await s.save(r, 0, row());
      await s.recordCall(r, 0, 0, "call 0:0");
    },
    batch: [record(0, 1), record(0, 1, "another")],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a record of a stale segment after a good checkpoint",
    setup: async (s, r) => {
      await s.save(r, 0, row());
      await s.save(r, 1, row({ segment: 1 }));
    },
    batch: [save(2, { segment: 1 }), record(0, 0)],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a checkpoint of a stale segment after good records",
    setup: async (s, r) => {
      await s.save(r, 0, row());
      await s.save(r, 1, row({ segment: 1 }));
    },
    batch: [record(1, 0), save(2, { segment: 0 })],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a taken step after good records",
    setup: async (s, r) => {
      await s.save(r, 0, row());
      await s.save(r, 1, row());
    },
    batch: [record(0, 0), save(1)],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "a checkpoint of another flow after good records",
    setup: (s, r) => s.save(r, 0, row()),
    batch: [record(0, 0), save(1, { name: "g" })],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "records of an ended run",
    setup: (s, r) => s.save(r, 0, row({ status: "done" })),
    batch: [record(0, 0)],
    at: 0,
    error: CheckpointConflict,
  },
  {
    name: "a checkpoint of an ended run",
    setup: (s, r) => s.save(r, 0, row({ status: "done" })),
    batch: [save(1)],
    at: 0,
    error: CheckpointConflict,
  },
  {
    name: "a record after the batch's own checkpoint ended the run",
    setup: (s, r) => s.save(r, 0, row()),
    batch: [record(0, 0), save(1, { status: "done" }), record(0, 1)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a claim of another owner's live lease after good records",
    setup: (s, r) => s.save(r, 0, row(), HOLDER),
    batch: [record(0, 0), save(1, { segment: 1 }, CLAIMER), record(1, 0)],
    at: 1,
    error: LeaseHeld,
  },
  {
    name: "a record of the old segment after a claim in the batch",
    setup: (s, r) => s.save(r, 0, row()),
    batch: [record(0, 0), save(1, { segment: 1 }), record(0, 1)],
    at: 2,
    error: CheckpointConflict,
  },
  {
    name: "a record of the new segment not numbered from 0 after a claim in the batch",
    setup: async (s, r) => {
      await s.save(r, 0, row());
      await s.recordCall(r, 0, 0, "call 0:0");
    },
    batch: [save(1, { segment: 1 }), record(1, 1)],
    at: 1,
    error: CheckpointConflict,
  },
  {
    name: "records of an unknown run",
    setup: async () => {},
    batch: [record(0, 0)],
    at: 0,
    error: CheckpointNotFound,
  },
  {
    name: "a first checkpoint that is not step 0, before records",
    setup: async () => {},
    batch: [save(1), record(0, 0)],
    at: 0,
    error: CheckpointConflict,
  },
];

/** The message but for its numbers: LeaseHeld names the expiry and the store's now, which differ between two runs. */
const withoutNumbers = (message: string) => message.replace(/\d+/g, "#");

// These files share one Redis server: every store has its own random prefix, and files run one at a time.
if (await redisAnswers()) {
  const opened: RedisCheckpointStore[] = [];
  const store = (options: Parameters<typeof newStore>[0] = {}) => {
    const made = newStore(options);
    opened.push(made);
    return made;
  };
  let admin: Admin;
  beforeAll(async () => {
    admin = await redisAdmin();
  });
  afterAll(async () => {
    await admin?.close();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const made of opened.splice(0)) {
      await dropPrefix(made);
      await made.close();
    }
  });

  describe("RedisCheckpointStore commit", () => {
    it("lands [records, save, records] whole, numbered on from what the run holds, and single writes go on from it", async () => {
      const s = store();
      await s.save("r", 0, row());
      await s.recordCall("r", 0, 0, "call 0:0");
      await s.commit("r", [record(0, 1), record(0, 2), save(1, {}, HOLDER), record(0, 3), record(0, 4)]);
      expect((await s.latest("r")).step).toBe(1);
      expect((await s.calls("r")).map((c) => c.sealed)).toEqual([0, 1, 2, 3, 4].map((seq) => `call 0:${seq}`));
      expect((await s.leaseOf("r"))?.owner).toBe("holder");
      await s.recordCall("r", 0, 5, "call 0:5");
      await s.save("r", 2, row({ status: "done" }));
      expect(await s.calls("r")).toHaveLength(6);
    });

    it("starts a run with a save of step 0, and numbers the records after a claim from 0 in the new segment", async () => {
      const s = store();
      await s.commit("r", [save(0, {}, HOLDER), record(0, 0)]);
      await s.commit("r", [record(0, 1), save(1, { segment: 1 }, { ...CLAIMER, takeOver: true }), record(1, 0)]);
      expect((await s.calls("r")).map((c) => [c.segment, c.seq])).toEqual([
        [0, 0],
        [0, 1],
        [1, 0],
      ]);
      expect((await s.leaseOf("r"))?.owner).toBe("claimer");
      const keys = s.keysOf("r");
      const entry = await admin.hGet(keys.claimableOf, indexMember("f", "r"));
      expect(await admin.zScore(keys.claimable, String(entry))).toBe(0);
      await expect(s.recordCall("r", 0, 2, "fenced")).rejects.toThrow(CheckpointConflict);
      await s.recordCall("r", 1, 1, "call 1:1");
    });

    it("accepts a retried record in a batch once, as recordCall does", async () => {
      const s = store();
      await s.save("r", 0, row());
      await s.recordCall("r", 0, 0, "call 0:0");
      await s.commit("r", [record(0, 0), record(0, 1), record(0, 1)]);
      await s.commit("r", [record(0, 0)]);
      expect((await s.calls("r")).map((c) => c.seq)).toEqual([0, 1]);
    });

    it(`lands a batch of ${MAX_BATCH_WRITES} writes that starts a run`, async () => {
      const s = store();
      const records = Array.from({ length: MAX_BATCH_WRITES - 1 }, (_, seq) => record(0, seq));
      await s.commit("r", [save(0), ...records]);
      expect(await s.calls("r")).toHaveLength(MAX_BATCH_WRITES - 1);
      await s.recordCall("r", 0, MAX_BATCH_WRITES - 1, "next");
    });

    it.each(REFUSED)("refuses $name as the single operation does, and writes nothing of the batch", async (c) => {
      const s = store();
      await c.setup(s, "r");
      const before = await rawRun(admin, s, "r");
      const error = await refusal(s.commit("r", c.batch));
      expect(await rawRun(admin, s, "r")).toEqual(before);
      // The same writes one at a time on the same run of another prefix: the refused one fails the same way.
      const twin = store();
      await c.setup(twin, "r");
      for (const write of c.batch.slice(0, c.at)) await single(twin, "r", write);
      const alone = await refusal(single(twin, "r", c.batch[c.at]!));
      expect(error).toBeInstanceOf(c.error);
      expect(alone).toBeInstanceOf(c.error);
      if (error instanceof LeaseHeld) {
        expect(error.owner).toBe("holder");
        expect(withoutNumbers(error.message)).toBe(withoutNumbers(alone.message));
      } else expect(error.message).toBe(alone.message);
    });

    it("refuses a malformed batch with InvalidInput before it connects", async () => {
      const unreachable = new RedisCheckpointStore(() => {
        throw new Error("the store connected");
      });
      const malformed: unknown[] = [
        [],
        [save(1), save(2)],
        Array.from({ length: MAX_BATCH_WRITES + 1 }, (_, seq) => record(0, seq)),
        [record(0, -1)],
        [record(0.5, 0)],
        [{ ...record(0, 0), kind: "erase" }],
        [{ kind: "save", step: 1, row: row(), lease: { owner: "x".repeat(201), ms: 1 } }],
        "not an array",
      ];
      for (const writes of malformed)
        await expect(
          unreachable.commit("r", writes as RunWrite[]),
          JSON.stringify(writes).slice(0, 80),
        ).rejects.toThrow(InvalidInput);
    });

    it("gives a run its TTL with the batch that ends it, never before (a crashed run keeps its evidence); a refused batch leaves the keys", async () => {
      const s = store({ ttlSeconds: 100 });
      const keys = s.keysOf("r");
      const run = [keys.meta, keys.cps, keys.calls];
      const ttls = () => Promise.all(run.map((key) => admin.pTTL(key)));
      await s.commit("r", [save(0), record(0, 0)]);
      await s.commit("r", [record(0, 1), save(1), record(0, 2)]);
      await s.commit("r", [record(0, 3), save(2, { status: "paused" })]);
      expect(await ttls()).toEqual([-1, -1, -1]);
      expect(await admin.zScore(keys.expiring, indexMember("f", "r"))).toBeNull();
      await refusal(s.commit("r", [save(3), record(0, 5)]));
      expect(await ttls()).toEqual([-1, -1, -1]);
      await s.commit("r", [record(0, 4), save(3, { status: "done" })]);
      expect(Math.min(...(await ttls()))).toBeGreaterThan(90_000);
      const plain = store();
      await plain.commit("r", [save(0), record(0, 0)]);
      await plain.commit("r", [record(0, 1), save(1), record(0, 2)]);
      expect(await Promise.all([plain.keysOf("r").meta, plain.keysOf("r").calls].map((k) => admin.pTTL(k)))).toEqual([
        -1, -1,
      ]);
    });

    it("sends one EVALSHA per batch, whose keys share one hash tag (one cluster slot)", async () => {
      let sent: ReturnType<typeof vi.spyOn> | undefined;
      const spied = () => {
        const made = client();
        sent = vi.spyOn(made, "evalSha");
        return made;
      };
      const s = new RedisCheckpointStore(spied, { prefix: newStore().prefix });
      opened.push(s);
      await s.commit("r", [save(0), record(0, 0)]);
      sent!.mockClear();
      await s.commit("r", [record(0, 1), save(1), record(0, 2)]);
      expect(sent!.mock.calls).toHaveLength(1);
      const [, { keys }] = sent!.mock.calls[0] as [string, { keys: string[] }];
      const k = s.keysOf("r");
      expect(keys).toEqual([
        ...[k.meta, k.cps, k.calls, k.unfinished, k.expiring, k.claimable, k.claimableOf, k.recent],
        ...[k.inbox, k.inboxByKey, k.stream],
      ]);
      expect(new Set(keys.map((key) => key.slice(key.indexOf("{"), key.indexOf("}") + 1))).size).toBe(1);
    });
  });

  // A server of this file's own: its command statistics count only this store's commands.
  describe("RedisCheckpointStore commit cost", () => {
    let server: OwnRedis;
    beforeAll(async () => {
      server = await OwnRedis.start();
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("runs a batch [record, save, record] in one script with the commands of one save and one more HSET", async () => {
      const own = createClient({ url: server.url });
      await own.connect();
      const s = new RedisCheckpointStore(() => createClient({ url: server.url }), { prefix: "cost" });
      const commands = async (op: () => Promise<void>) => {
        await own.configResetStat();
        await op();
        const stats = String(await own.sendCommand(["INFO", "commandstats"]));
        return Object.fromEntries(
          [...stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].flatMap(([, name, calls]) =>
            ["info", "config"].includes(String(name)) ? [] : [[String(name), Number(calls)]],
          ),
        );
      };
      await s.commit("r", [save(0, {}, HOLDER), record(0, 0)]);
      await s.commit("w", [save(0, {}, HOLDER)]);
      const one = await commands(() => s.save("w", 1, row(), HOLDER));
      const batch = await commands(() => s.commit("r", [record(0, 1), save(1, {}, HOLDER), record(0, 2)]));
      expect(batch.evalsha).toBe(1);
      expect(batch).toEqual({ ...one, hset: (one.hset ?? 0) + 1 });
      await s.close();
      await own.close();
    });
  });
} else {
  describe("redis commit", () =>
    it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}
