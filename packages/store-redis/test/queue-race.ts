import {
  ASLEEP,
  CheckpointConflict,
  CheckpointNotFound,
  LeaseHeld,
  QueueFull,
  type QueuePlace,
} from "@durable/core/store";
import type { RedisCheckpointStore } from "../src/index.js";
import { row } from "./redis.js";

/** The concurrency keys the racing runs are spread over. */
export const RACE_KEYS = ["a", "b", "c"] as const;

/** What racing workers did, counted by themselves: the most runs they held at once, in all and per key. */
export interface RaceTally {
  most: number;
  mostOfKey: number;
  takes: number;
  full: number;
  refused: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** Starts `count` runs on the queue as `runner.start` does: step 0 alone names the queue, with no lease. */
export async function startRuns(store: RedisCheckpointStore, place: QueuePlace, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const runId = `race-${i}-${crypto.randomUUID()}`;
    await store.save(runId, 0, row({ queue: { ...place, key: RACE_KEYS[i % RACE_KEYS.length] } }));
    ids.push(runId);
  }
  return ids;
}

/**
 * Workers (each on one of `stores`, round robin) race for the queue's runs
 * for `ms`: each takes one it lists (or resumes one parked earlier) the way
 * the runtime does (rows after step 0 carry no queue; a new owner per take),
 * holds it a moment, then ends it, pauses it, parks it waiting for a
 * decision, puts it to sleep, releases it, renews its lease, or dies
 * holding it (its lease runs out). They count what they hold themselves:
 * up once a take resolved, down before the write that gives it back is sent
 * (at once for a death, which can only count too few).
 */
export async function raceQueue(
  stores: readonly RedisCheckpointStore[],
  place: QueuePlace,
  keyOf: ReadonlyMap<string, string>,
  options: { workers: number; ms: number; leaseMs: number },
): Promise<RaceTally> {
  const tally: RaceTally = { most: 0, mostOfKey: 0, takes: 0, full: 0, refused: 0 };
  const parked: string[] = [];
  const byKey = new Map<string, number>();
  let holding = 0;
  const until = Date.now() + options.ms;
  const worker = async (w: number): Promise<void> => {
    const store = stores[w % stores.length] as RedisCheckpointStore;
    for (let n = 0; Date.now() < until; n++) {
      let runId = parked.length > 0 && Math.random() < 0.3 ? parked.shift() : undefined;
      if (runId === undefined) {
        const listed: string[] = [];
        for await (const run of store.listQueued(place.queue)) if (listed.push(run.runId) >= 4) break;
        runId = listed.length === 0 ? undefined : pick(listed);
      }
      if (runId === undefined) {
        await sleep(5);
        continue;
      }
      const owner = `w${w}#${n}`;
      const key = keyOf.get(runId) ?? "";
      let step: number;
      let segment: number;
      try {
        const latest = await store.latest(runId);
        if (latest.status === "done") continue;
        step = latest.step + 1;
        segment = latest.segment + 1;
        await store.save(runId, step, row({ segment }), { owner, ms: options.leaseMs });
      } catch (error) {
        if (error instanceof QueueFull) tally.full += 1;
        else if (error instanceof LeaseHeld || error instanceof CheckpointConflict) tally.refused += 1;
        else throw error;
        if (error instanceof QueueFull && !parked.includes(runId)) parked.push(runId);
        await sleep(2);
        continue;
      }
      tally.takes += 1;
      holding += 1;
      byKey.set(key, (byKey.get(key) ?? 0) + 1);
      tally.most = Math.max(tally.most, holding);
      tally.mostOfKey = Math.max(tally.mostOfKey, byKey.get(key) ?? 0);
      await sleep(2 + Math.random() * 15);
      const action = pick(["end", "end", "pause", "decide", "sleep", "release", "renew", "die"] as const);
      try {
        if (action === "renew") {
          await store.renew(runId, segment, { owner, ms: options.leaseMs });
          await sleep(2 + Math.random() * 10);
        }
        holding -= 1;
        byKey.set(key, (byKey.get(key) ?? 0) - 1);
        const next = step + 1;
        if (action === "end" || action === "renew") await store.save(runId, next, row({ segment, status: "done" }));
        else if (action === "pause") await store.save(runId, next, row({ segment, status: "paused" }));
        else if (action === "decide") await store.save(runId, next, { ...row({ segment }), waitsForDecision: true });
        else if (action === "sleep")
          await store.save(runId, next, row({ segment }), { owner: ASLEEP, ms: 20 + Math.floor(Math.random() * 60) });
        else if (action === "release") await store.release(runId, segment, owner);
        if (action === "pause" || action === "decide") parked.push(runId);
      } catch (error) {
        // Its lease ran out on a slow machine and another worker took the run: what this drive wrote is fenced.
        if (!(error instanceof CheckpointConflict || error instanceof CheckpointNotFound)) throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
  return tally;
}
