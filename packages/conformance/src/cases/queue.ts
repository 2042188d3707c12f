import { CheckpointConflict, InvalidInput, LeaseHeld, QueueFull } from "@durable/core";
import { ASLEEP, type CheckpointStore, type QueuePlace, WAITING } from "@durable/core/store";
import { expect } from "vitest";
import type { ConformanceCase, ConformanceGroup } from "./case.js";
import { sleep } from "./clock.js";
import { LONG_MS, PAST_MS, SHORT_MS } from "./lease-checks.js";
import { unfinished } from "./read.js";
import { expectRejects, expectResolves } from "./rule.js";
import { expectFull, listed, next, queued, queueOf, queueRule, take, type Queueing } from "./queue-checks.js";

/** How many workers race for one queue's runs, and how many runs they share. */
const WORKERS = 8;
const RACED_RUNS = 24;
const RACE_LIMIT = 3;

const orderCase: ConformanceCase = {
  name: "listQueued gives a queue's claimable runs highest priority first, FIFO within a priority, once each and no other queue's; the claimable listing leaves queued runs out",
  async run(h) {
    const flow = h.runId("queue-flow");
    const place = queueOf(h);
    const ids: Record<string, string> = {};
    for (const [name, priority] of [
      ["a", 0],
      ["b", 5],
      ["c", 0],
      ["d", 5],
      ["e", -1],
    ] as const)
      ids[name] = await queued(h, flow, place, { priority });
    await queued(h, flow, queueOf(h));
    const plain = h.runId("plain");
    await h.store.save(plain, 0, h.row(plain, 0, { name: flow }));
    const expected = ["b", "d", "a", "c", "e"].map((name) => ids[name]);
    expect(await listed(h, place.queue), queueRule("listQueued(queue)", "b, d (priority 5), a, c (0), e (-1)")).toEqual(
      expected,
    );
    expect(
      (await unfinished(h.store, flow, { claimable: true })).sort(),
      queueRule("listUnfinished(flow, { claimable: true })", "the run started on no queue only"),
    ).toEqual([plain]);
    expect(
      (await unfinished(h.store, flow)).length,
      queueRule("listUnfinished(flow)", "every unfinished run, queued or not (7)"),
    ).toBe(7);
    await expectRejects(
      CheckpointConflict,
      queueRule("save(runId, 0) of a queued run id again", "CheckpointConflict"),
      h.store.save(ids.a as string, 0, h.row(ids.a as string, 0, { name: flow, queue: place })),
    );
    // Taken, asleep, waiting for an event, for a decision, paused or ended: not claimable, not listed.
    await take(h, flow, place, ids.b as string, "worker-a");
    await take(h, flow, place, ids.d as string, "worker-a");
    await next(h, flow, place, ids.d as string, "running", { owner: ASLEEP, ms: LONG_MS });
    await take(h, flow, place, ids.a as string, "worker-a");
    await next(h, flow, place, ids.a as string, "running", { owner: WAITING, ms: LONG_MS });
    await take(h, flow, place, ids.c as string, "worker-a");
    const latest = await h.store.latest(ids.c as string);
    const decision = {
      ...h.row(ids.c as string, latest.step + 1, { name: flow, queue: place, segment: 1 }),
      waitsForDecision: true,
    };
    await h.store.save(ids.c as string, latest.step + 1, decision);
    await take(h, flow, place, ids.e as string, "worker-a");
    await next(h, flow, place, ids.e as string, "paused");
    expect(
      await listed(h, place.queue),
      queueRule(
        "listQueued(queue) once each run is taken, asleep, waiting, waiting for a decision or paused",
        "no run",
      ),
    ).toEqual([]);
    await next(h, flow, place, ids.b as string, "running");
    expect(
      await listed(h, place.queue),
      queueRule("listQueued(queue) after the holder of b released its lease", "b"),
    ).toEqual([ids.b]);
    // A worker out of rate skips the runs at step 0 (their claim is a start): a step given must be the latest.
    for await (const run of (h.store as Queueing).listQueued(place.queue))
      if (run.step !== undefined)
        expect(run.step, queueRule("listQueued(queue)'s step of b", "its latest step, 2")).toBe(2);
  },
};

const concurrencyCase: ConformanceCase = {
  name: "a take beyond the queue's concurrency is QueueFull and writes nothing; a run that ends, sleeps, waits, pauses or lets its lease run out frees its slot, and renewing a lease that ran out is a take",
  timeout: 30_000,
  async run(h) {
    const flow = h.runId("queue-flow");
    const place = queueOf(h, { concurrency: 2 });
    const runs = [];
    for (let i = 0; i < 6; i++) runs.push(await queued(h, flow, place));
    const [r1, r2, r3, r4, r5, r6] = runs as [string, string, string, string, string, string];
    await take(h, flow, place, r1, "worker-a");
    await take(h, flow, place, r2, "worker-b");
    await expectFull(h, r3, "concurrency", "a third take with concurrency 2", () =>
      take(h, flow, place, r3, "worker-c"),
    );
    const leased = h.runId("queued");
    await expectRejects(
      QueueFull,
      queueRule(
        "save(runId, 0) of a new run of the full queue with a lease",
        "QueueFull: a start that leases is a take",
      ),
      h.store.save(leased, 0, h.row(leased, 0, { name: flow, queue: place }), { owner: "worker-c", ms: LONG_MS }),
    );
    await next(h, flow, place, r1, "done");
    await expectResolves(queueRule("a take once a holder ended", "accepted"), take(h, flow, place, r3, "worker-c"));
    await next(h, flow, place, r2, "running", { owner: ASLEEP, ms: LONG_MS });
    await expectResolves(
      queueRule("a take once a holder fell asleep", "accepted"),
      take(h, flow, place, r4, "worker-b"),
    );
    await next(h, flow, place, r4, "running", { owner: WAITING, ms: LONG_MS, events: 0 });
    await expectResolves(
      queueRule("a take once a holder waits for an event", "accepted"),
      take(h, flow, place, r5, "worker-d", { ms: SHORT_MS }),
    );
    await expectFull(h, r6, "concurrency", "a take while r3 and r5 hold", () => take(h, flow, place, r6, "worker-e"));
    await next(h, flow, place, r3, "paused");
    await expectResolves(queueRule("a take once a holder paused", "accepted"), take(h, flow, place, r6, "worker-e"));
    await sleep(SHORT_MS + PAST_MS);
    const woken = await queued(h, flow, place);
    await expectResolves(
      queueRule("a take once a holder's lease ran out by the store's clock", "accepted"),
      take(h, flow, place, woken, "worker-f"),
    );
    const segment = (await h.store.latest(r5)).segment;
    await expectRejects(
      QueueFull,
      queueRule(
        "renew(runId) of a lease that ran out while the queue filled up",
        "QueueFull: renewing it takes a slot",
      ),
      h.store.renew(r5, segment, { owner: "worker-d", ms: LONG_MS }),
    );
    await expectResolves(
      queueRule("renew(runId) by a live holder of the full queue", "accepted: it holds its slot"),
      h.store.renew(woken, (await h.store.latest(woken)).segment, { owner: "worker-f", ms: LONG_MS }),
    );
    if (h.store.commit === undefined) return;
    const batched = await queued(h, flow, place);
    const row = h.row(batched, 1, { name: flow, queue: place, segment: 1 });
    await expectFull(h, batched, "concurrency", "a take by commit while the queue is full", () =>
      (h.store.commit as NonNullable<CheckpointStore["commit"]>)(batched, [
        { kind: "save", step: 1, row, lease: { owner: "worker-g", ms: LONG_MS } },
      ]),
    );
  },
};

const perKeyCase: ConformanceCase = {
  name: "a take beyond the per-key limit of the run's concurrency key is QueueFull (key); runs of other keys and of none go on",
  async run(h) {
    const flow = h.runId("queue-flow");
    const place = queueOf(h, { concurrency: 10, perKey: 1 });
    const alice = [await queued(h, flow, place, { key: "alice" }), await queued(h, flow, place, { key: "alice" })];
    const bob = await queued(h, flow, place, { key: "bob" });
    const none = await queued(h, flow, place);
    const keys: (string | undefined)[] = [];
    for await (const run of (h.store as Queueing).listQueued(place.queue)) keys.push(run.key);
    expect(keys, queueRule("listQueued(queue) over runs of keys alice, alice, bob and none", "each run's key")).toEqual(
      ["alice", "alice", "bob", undefined],
    );
    const alicePlace = { ...place, key: "alice" };
    await take(h, flow, alicePlace, alice[0] as string, "worker-a");
    await expectFull(h, alice[1] as string, "key", "a second take of key alice with perKey 1", () =>
      take(h, flow, alicePlace, alice[1] as string, "worker-b"),
    );
    await expectResolves(
      queueRule("a take of key bob", "accepted"),
      take(h, flow, { ...place, key: "bob" }, bob, "worker-b"),
    );
    await expectResolves(queueRule("a take of a run with no key", "accepted"), take(h, flow, place, none, "worker-c"));
    await next(h, flow, alicePlace, alice[0] as string, "done");
    await expectResolves(
      queueRule("the second take of key alice once the first ended", "accepted"),
      take(h, flow, alicePlace, alice[1] as string, "worker-b"),
    );
  },
};

const rateCase: ConformanceCase = {
  name: "a queue starts at most its rate limit of runs in any window by the store's clock (QueueFull rate, with when to try again); later takes of a started run are not starts",
  timeout: 30_000,
  async run(h) {
    const flow = h.runId("queue-flow");
    const windowMs = 1_500;
    const place = queueOf(h, { rate: { limit: 2, windowMs } });
    const [r1, r2, r3] = [await queued(h, flow, place), await queued(h, flow, place), await queued(h, flow, place)];
    await take(h, flow, place, r1, "worker-a");
    await take(h, flow, place, r2, "worker-a");
    const full = await expectFull(h, r3, "rate", "a third start within the window", () =>
      take(h, flow, place, r3, "worker-b"),
    );
    expect(
      full.retryAfterMs !== undefined && full.retryAfterMs > 0 && full.retryAfterMs <= windowMs,
      queueRule("the rate refusal's retryAfterMs", `a time in (0, ${windowMs}] ms`),
    ).toBe(true);
    await next(h, flow, place, r1, "running");
    await expectResolves(
      queueRule("a take of a started run at a later step within the window", "accepted: not a start"),
      take(h, flow, place, r1, "worker-c"),
    );
    await sleep((full.retryAfterMs ?? windowMs) + PAST_MS);
    await expectResolves(
      queueRule("the third start once the window has room", "accepted"),
      take(h, flow, place, r3, "worker-b"),
    );
  },
};

const raceCase: ConformanceCase = {
  name: `${WORKERS} racing workers take a queue's ${RACED_RUNS} runs: never more than its concurrency (${RACE_LIMIT}) hold one at once, and every run ends`,
  timeout: 60_000,
  async run(h) {
    const flow = h.runId("queue-flow");
    const place = queueOf(h, { concurrency: RACE_LIMIT });
    for (let i = 0; i < RACED_RUNS; i++) await queued(h, flow, place);
    const stores = [h.store, ...(await Promise.all([1, 2, 3].map(() => h.connect().catch(() => h.store))))];
    // Counted by the workers, not the store: up once a take resolved, down before the save that ends the run is sent.
    let holding = 0;
    let most = 0;
    let ended = 0;
    const worker = async (i: number): Promise<void> => {
      const store = stores[i % stores.length] as CheckpointStore;
      const give = Date.now() + 45_000;
      while (ended < RACED_RUNS && Date.now() < give) {
        let took = false;
        // Each worker starts at its own place in the list: takes of different runs race, not only takes of the first.
        const runs = await listed(h, place.queue, store);
        const from = runs.length === 0 ? 0 : i % runs.length;
        for (const runId of [...runs.slice(from), ...runs.slice(0, from)]) {
          try {
            await take(h, flow, place, runId, `worker-${i}`, { store });
          } catch (error) {
            if (error instanceof QueueFull) break;
            if (error instanceof CheckpointConflict || error instanceof LeaseHeld) continue;
            throw error;
          }
          took = true;
          holding += 1;
          most = Math.max(most, holding);
          await sleep(5 + Math.random() * 15);
          holding -= 1;
          const latest = await store.latest(runId);
          const row = h.row(runId, latest.step + 1, {
            name: flow,
            queue: place,
            segment: latest.segment,
            status: "done",
          });
          await store.save(runId, latest.step + 1, row);
          ended += 1;
          break;
        }
        if (!took) await sleep(5);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
    expect(
      most,
      queueRule(
        `${WORKERS} racing workers' takes with concurrency ${RACE_LIMIT}`,
        `at most ${RACE_LIMIT} runs held at once`,
      ),
    ).toBeLessThanOrEqual(RACE_LIMIT);
    expect(ended, queueRule(`${WORKERS} racing workers`, `all ${RACED_RUNS} runs taken and ended`)).toBe(RACED_RUNS);
  },
};

const stepZeroCase: ConformanceCase = {
  name: "the place a run's step 0 gave holds for its life: takes whose rows name no queue (as a runner saves a claim) or another one are held to its limits",
  async run(h) {
    const flow = h.runId("queue-flow");
    const place = queueOf(h, { concurrency: 1 });
    const [r1, r2] = [await queued(h, flow, place), await queued(h, flow, place)];
    // A claim whose row names `queue`, or none: only step 0's row names the run's queue.
    const claim = async (runId: string, owner: string, queue?: QueuePlace): Promise<void> => {
      const latest = await h.store.latest(runId);
      const row = h.row(runId, latest.step + 1, { name: flow, segment: latest.segment + 1, ...(queue && { queue }) });
      await h.store.save(runId, latest.step + 1, row, { owner, ms: LONG_MS });
    };
    await expectResolves(queueRule("a take whose row names no queue", "accepted"), claim(r1, "worker-a"));
    await expectFull(h, r2, "concurrency", "a take whose row names no queue while the run's queue is full", () =>
      claim(r2, "worker-b"),
    );
    await expectFull(h, r2, "concurrency", "a take whose row names another queue while the run's is full", () =>
      claim(r2, "worker-b", queueOf(h)),
    );
    await expectResolves(
      queueRule("renew(runId) by the live holder of a run whose rows after step 0 name no queue", "accepted"),
      h.store.renew(r1, (await h.store.latest(r1)).segment, { owner: "worker-a", ms: LONG_MS }),
    );
    expect(await listed(h, place.queue), queueRule("listQueued(queue) while r1 is held", "r2 only")).toEqual([r2]);
  },
};

const malformedCase: ConformanceCase = {
  name: "a malformed queue place is InvalidInput, and nothing is written",
  async run(h) {
    const flow = h.runId("queue-flow");
    const bad: unknown[] = [
      { queue: "", priority: 0 },
      { queue: "q".repeat(129), priority: 0 },
      { queue: "q", priority: 1.5 },
      { queue: "q", priority: 0, key: "" },
      { queue: "q", priority: 0, concurrency: 0 },
      { queue: "q", priority: 0, perKey: -1 },
      { queue: "q", priority: 0, rate: { limit: 1, windowMs: 0 } },
      { queue: "q", priority: 0, rate: { limit: 0, windowMs: 1_000 } },
    ];
    for (const place of bad) {
      const runId = h.runId("queued");
      const row = { ...h.row(runId, 0, { name: flow }), queue: place as QueuePlace };
      await expectRejects(
        InvalidInput,
        queueRule(`save(runId, 0) with queue ${JSON.stringify(place)}`, "InvalidInput"),
        h.store.save(runId, 0, row),
      );
      expect(await unfinished(h.store, flow), queueRule("listUnfinished(flow) after it", "no run")).toEqual([]);
    }
  },
};

export const queueGroup: ConformanceGroup = {
  name: "queue",
  proves:
    "a store with the queues capability lists a queue's runs by priority then FIFO, and refuses every take beyond the queue's concurrency, per-key and rate limits, whatever the number of racing workers",
  skipFor: (store) =>
    store.listQueued === undefined ? "the store has no queues capability (`listQueued`)" : undefined,
  cases: [orderCase, concurrencyCase, perKeyCase, rateCase, raceCase, stepZeroCase, malformedCase],
};
