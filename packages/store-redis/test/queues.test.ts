import { afterEach, describe, expect, it } from "vitest";
import { type CheckpointStore, InvalidInput, QueueFull, type QueuePlace, WAITING } from "@durable/core/store";
import { redisAdmin } from "@durable/test-utils/redis";
import { RedisCheckpointStore, type RedisStoreOptions } from "../src/index.js";
import { hex, queueKeys } from "../src/keys.js";
import { RACE_KEYS, raceQueue, startRuns } from "./queue-race.js";
import { client, dropPrefix, newStore, redisAnswers, row } from "./redis.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function listed(store: CheckpointStore, queue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of store.listQueued?.(queue) ?? []) ids.push(run.runId);
  return ids;
}

async function claimable(store: CheckpointStore, name = "f"): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(name, { claimable: true })) ids.push(id);
  return ids;
}

// Each test has stores of its own on a random prefix (several objects on one prefix: several workers), dropped afterwards.
const opened: RedisCheckpointStore[] = [];
function store(options: RedisStoreOptions = {}): RedisCheckpointStore {
  const made = newStore(options);
  opened.push(made);
  return made;
}
/** Another store object on the same prefix, as another worker process has: it knows nothing of the runs. */
function another(of: RedisCheckpointStore, options: RedisStoreOptions = {}): RedisCheckpointStore {
  const made = new RedisCheckpointStore(client, { ...options, prefix: of.prefix });
  opened.push(made);
  return made;
}
afterEach(async () => {
  for (const made of opened.splice(0)) {
    await dropPrefix(made);
    await made.close();
  }
});

/** A claim as the runtime saves it: the next step, a raised segment, a lease, and no queue on the row. */
async function claim(on: CheckpointStore, runId: string, owner: string, ms = 60_000): Promise<{ segment: number }> {
  const latest = await on.latest(runId);
  const segment = latest.segment + 1;
  await on.save(runId, latest.step + 1, row({ segment }), { owner, ms });
  return { segment };
}

/** The run's next step at its segment, as its holder saves it (no lease: released). */
async function next(
  on: CheckpointStore,
  runId: string,
  over: Parameters<typeof row>[0],
  lease?: { owner: string; ms: number },
) {
  const latest = await on.latest(runId);
  await on.save(runId, latest.step + 1, row({ segment: latest.segment, ...over }), lease);
}

const place = (limits: Omit<QueuePlace, "queue" | "priority"> = {}): QueuePlace => ({
  queue: `q-${crypto.randomUUID()}`,
  priority: 0,
  ...limits,
});

if (await redisAnswers()) {
  describe("RedisCheckpointStore queues", () => {
    it("keeps a queue's limits for runs whose rows after step 0 name no queue, taken, renewed and released through store objects that never saw them", async () => {
      const starter = store();
      const q = place({ concurrency: 1 });
      await starter.save("r1", 0, row({ queue: q }));
      await starter.save("r2", 0, row({ queue: q }));
      const [a, b, c, d] = [another(starter), another(starter), another(starter), another(starter)];
      const held = await claim(a, "r1", "a#1");
      expect(await refusal(claim(b, "r2", "b#1"))).toBeInstanceOf(QueueFull);
      // A renewal from yet another object: the run's queue comes from its meta, and a live holder keeps its slot.
      expect((await c.renew("r1", held.segment, { owner: "a#1", ms: 60_000 })).owner).toBe("a#1");
      expect(await refusal(claim(b, "r2", "b#2"))).toBeInstanceOf(QueueFull);
      await d.release("r1", held.segment, "a#1");
      await claim(b, "r2", "b#3");
      expect(await refusal(claim(c, "r1", "c#1"))).toBeInstanceOf(QueueFull);
      expect(await listed(d, q.queue)).toEqual(["r1"]);
      expect(await claimable(d)).toEqual([]);
    });

    it("frees a dead worker's slot once its lease and clockSkewMs have passed by the server's clock, and not before; its lease ends clockSkewMs before its reservation", async () => {
      const s = store({ clockSkewMs: 1_000 });
      const q = place({ concurrency: 1 });
      await s.save("dead", 0, row({ queue: q }));
      await s.save("next", 0, row({ queue: q }));
      await claim(s, "dead", "w#dead", 300);
      const admin = await redisAdmin();
      const reserved = await admin.zScore(queueKeys(s.prefix, q.queue).slots, `${hex("dead")}:w#dead`);
      await admin.close();
      const lease = await s.leaseOf("dead");
      expect(reserved).not.toBeNull();
      expect(lease!.expiresAt).toBeLessThanOrEqual(reserved! - 1_000);
      expect(lease!.expiresAt).toBeGreaterThan(reserved! - 1_000 - 100);
      // The worker dies: nothing more is written. Past its lease (claimable again), its slot is still reserved.
      await sleep(500);
      expect(await listed(s, q.queue)).toEqual(["dead", "next"]);
      expect(await refusal(claim(another(s, { clockSkewMs: 1_000 }), "next", "w#next"))).toBeInstanceOf(QueueFull);
      await sleep(1_000);
      await claim(another(s), "next", "w#next");
      expect(await refusal(claim(s, "dead", "w#again"))).toBeInstanceOf(QueueFull);
    });

    it("keeps queued runs out of every claimable listing, through a release, a wait's event and a save with no lease", async () => {
      const s = store();
      const q = place();
      await s.save("queued", 0, row({ queue: q }));
      await s.save("plain", 0, row());
      const { segment } = await claim(s, "queued", "w#1");
      await s.release("queued", segment, "w#1");
      await next(s, "queued", {}, { owner: WAITING, ms: 60_000 });
      await s.sendEvent("queued", { seq: 0, key: "k", sealed: "e" });
      expect(await s.leaseOf("queued")).toBeUndefined();
      await next(s, "queued", {});
      expect(await claimable(s)).toEqual(["plain"]);
      expect(await listed(s, q.queue)).toEqual(["queued"]);
    });

    it("puts a run back in its queue's order when a resume, a decision's claim or a retry of a failed run makes it claimable again, at the place its step 0 took", async () => {
      const s = store();
      const q = place();
      for (const id of ["first", "second", "third"]) await s.save(id, 0, row({ queue: q }));
      await claim(s, "first", "w#1");
      await next(s, "first", { status: "paused" });
      await claim(s, "second", "w#2");
      await s.save("second", 2, { ...row({ segment: 1 }), waitsForDecision: true });
      await claim(s, "third", "w#3");
      await next(s, "third", { status: "failed" });
      expect(await listed(s, q.queue)).toEqual([]);
      // Each taken again, released at once: claimable again in the queue's order.
      for (const [id, owner] of [
        ["third", "w#4"],
        ["second", "w#5"],
        ["first", "w#6"],
      ] as const) {
        const { segment } = await claim(s, id, owner);
        await s.release(id, segment, owner);
      }
      expect(await listed(another(s), q.queue)).toEqual(["first", "second", "third"]);
    });

    it("leaves nothing of a queue's slots and index behind once its runs ended or were deleted", async () => {
      const s = store();
      const q = place({ concurrency: 2, perKey: 1, key: "k", rate: { limit: 100, windowMs: 60_000 } });
      const ids = ["a", "b", "c", "d"];
      for (const id of ids) await s.save(id, 0, row({ queue: q }));
      await claim(s, "a", "w#a");
      await next(s, "a", { status: "done" });
      await claim(s, "b", "w#b");
      await next(s, "b", { status: "paused" });
      await claim(s, "c", "w#c");
      await s.delete("c");
      await s.delete("b");
      await claim(s, "d", "w#d");
      await next(s, "d", { status: "failed" });
      const keys = queueKeys(s.prefix, q.queue, "k");
      const admin = await redisAdmin();
      const left = await Promise.all([
        admin.zCard(keys.slots),
        admin.zCard(keys.keySlots),
        admin.zCard(keys.ready),
        admin.hLen(keys.readyOf),
        admin.hLen(keys.steps),
        admin.zCard(keys.starts),
      ]);
      await admin.close();
      expect(left).toEqual([0, 0, 0, 0, 0, 4]);
    });

    it("checks clockSkewMs: a whole number of ms from 0 to 60,000", () => {
      for (const clockSkewMs of [-1, 1.5, 60_001, Number.NaN, "100" as unknown as number])
        expect(() => new RedisCheckpointStore(client, { clockSkewMs })).toThrow(InvalidInput);
      expect(() => new RedisCheckpointStore(client, { clockSkewMs: 0 })).not.toThrow();
    });

    it("never lets more runs of a queue hold a lease than its limits while racing clients take, renew, sleep, pause, release and die: the server checks atomically, again and again, that every holder is reserved past its lease and every running run is in the queue's index", {
      timeout: 60_000,
    }, async () => {
      const first = store();
      const stores = [first, another(first), another(first), another(first)];
      const q = place({ concurrency: 3, perKey: 2 });
      const ids = await startRuns(first, q, 30);
      const keyOf = new Map(ids.map((id, i) => [id, RACE_KEYS[i % RACE_KEYS.length] as string]));
      const watch = watcher(first, q, ids);
      const tally = await raceQueue(stores, q, keyOf, { workers: 8, ms: 6_000, leaseMs: 1_500 });
      const seen = await watch.stop();
      expect(seen.violations).toEqual([]);
      expect(seen.looks).toBeGreaterThan(100);
      expect(seen.most).toBeGreaterThanOrEqual(2);
      expect(tally.most).toBeLessThanOrEqual(3);
      expect(tally.mostOfKey).toBeLessThanOrEqual(2);
      expect(tally.takes).toBeGreaterThan(30);
      expect(tally.full).toBeGreaterThan(0);
    });
  });
}

/**
 * KEYS slots ready key-slots of keys a b c, then the meta of each run; ARGV
 * concurrency per-key skew, then each run's hex id (its key: a, b, c in
 * turn). One atomic look at a queue and all its runs, on one node (a script
 * may touch any key there): how many hold a slot, and each broken rule.
 */
const LOOK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local concurrency, per_key, skew = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local held, of_key, bad = 0, {}, {}
for i = 6, #KEYS do
  local n = i - 6
  local z = 3 + n % 3
  local m = redis.call('HMGET', KEYS[i], 'status', 'owner', 'expires', 'decision', 'qmember')
  if m[1] == 'running' and m[2] and m[2] ~= '(asleep)' and m[2] ~= '(waiting)' and tonumber(m[3]) > now then
    held = held + 1
    of_key[z] = (of_key[z] or 0) + 1
    for _, k in ipairs({1, z}) do
      local score = tonumber(redis.call('ZSCORE', KEYS[k], ARGV[4 + n] .. ':' .. m[2]))
      if not score or score < tonumber(m[3]) + skew then
        table.insert(bad, 'run ' .. n .. ' holds until ' .. m[3] .. ', reserved in ' .. k .. ' until ' .. tostring(score))
      end
    end
  end
  if m[1] == 'running' and not m[4] and not (m[5] and redis.call('ZSCORE', KEYS[2], m[5])) then
    table.insert(bad, 'run ' .. n .. ' is running but not in the ready index')
  end
end
if held > concurrency then table.insert(bad, held .. ' runs hold a slot') end
for z, count in pairs(of_key) do
  if count > per_key then table.insert(bad, count .. ' runs of key ' .. z .. ' hold a slot') end
end
return {held, bad}`;

/** Looks at the queue and its runs atomically (LOOK) until stopped: the most holders seen, and every violation. */
function watcher(s: RedisCheckpointStore, q: QueuePlace, ids: readonly string[]) {
  const keys = [
    queueKeys(s.prefix, q.queue).slots,
    queueKeys(s.prefix, q.queue).ready,
    ...RACE_KEYS.map((key) => queueKeys(s.prefix, q.queue, key).keySlots),
    ...ids.map((id) => s.keysOf(id).meta),
  ];
  const args = [String(q.concurrency), String(q.perKey), "100", ...ids.map(hex)];
  let stopped = false;
  const seen = { most: 0, looks: 0, violations: [] as string[] };
  const done = (async () => {
    const admin = await redisAdmin();
    try {
      while (!stopped) {
        const [held, bad] = (await admin.eval(LOOK, { keys, arguments: args })) as [number, string[]];
        seen.looks += 1;
        seen.most = Math.max(seen.most, held);
        seen.violations.push(...bad);
        await sleep(2);
      }
    } finally {
      await admin.close();
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      return seen;
    },
  };
}
