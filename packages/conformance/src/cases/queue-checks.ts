import { QueueFull } from "@durable/core";
import type { CheckpointStore, LeaseClaim, QueuePlace } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import { LONG_MS } from "./lease-checks.js";
import { breaks, expectRejects } from "./rule.js";

// What the queue group's cases do to a store: start queued runs, take them as a worker's claim does, and check refusals.

/** A store with the queues capability: `listQueued` is then known to be there. */
export type Queueing = CheckpointStore & Required<Pick<CheckpointStore, "listQueued">>;

export const queueRule = (operation: string, expected: string): string => breaks("queues", operation, expected);

/** One queue of a case: its own name, so no other case's runs count against it. */
export function queueOf(h: Harness, limits: Omit<QueuePlace, "queue" | "priority"> = {}): QueuePlace {
  return { queue: h.runId("queue"), priority: 0, ...limits };
}

/** Starts a queued run as `runner.start` does: step 0, no lease, the queue place on the row. */
export async function queued(
  h: Harness,
  flow: string,
  place: QueuePlace,
  extra: Partial<QueuePlace> = {},
): Promise<string> {
  const runId = h.runId("queued");
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow, queue: { ...place, ...extra } }));
  return runId;
}

/** The run ids `listQueued` gives, in its order. */
export async function listed(h: Harness, queue: string, store: CheckpointStore = h.store): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of (store as Queueing).listQueued(queue)) ids.push(run.runId);
  return ids;
}

/** A take of a queued run at its latest step, as a worker's claim saves it: the next step, a raised segment, a lease. */
export async function take(
  h: Harness,
  flow: string,
  place: QueuePlace,
  runId: string,
  owner: string,
  options: { store?: CheckpointStore; ms?: number } = {},
): Promise<number> {
  const store = options.store ?? h.store;
  const latest = await store.latest(runId);
  const step = latest.step + 1;
  const row = h.row(runId, step, { name: flow, queue: place, segment: latest.segment + 1 });
  await store.save(runId, step, row, { owner, ms: options.ms ?? LONG_MS });
  return step;
}

/** Saves the run's next step as its holder would: `status`, keeping its segment, with `lease` (none: released). */
export async function next(
  h: Harness,
  flow: string,
  place: QueuePlace,
  runId: string,
  status: "running" | "paused" | "done",
  lease?: LeaseClaim,
): Promise<void> {
  const latest = await h.store.latest(runId);
  const row = h.row(runId, latest.step + 1, { name: flow, queue: place, segment: latest.segment, status });
  await h.store.save(runId, latest.step + 1, row, lease);
}

/** Expects a take to be `QueueFull` for `limit`, writing nothing: the run's latest step and lease as they were. */
export async function expectFull(
  h: Harness,
  runId: string,
  limit: QueueFull["limit"],
  operation: string,
  attempt: () => Promise<unknown>,
): Promise<QueueFull> {
  const [before, lease] = [await h.store.latest(runId), await h.store.leaseOf(runId)];
  const error = await expectRejects(
    QueueFull,
    queueRule(operation, `QueueFull (${limit}), writing nothing`),
    attempt(),
  );
  expect(error.limit, queueRule(operation, `QueueFull naming the ${limit} limit`)).toBe(limit);
  expect((await h.store.latest(runId)).step, queueRule(`latest(runId) after ${operation}`, "the step before")).toBe(
    before.step,
  );
  expect(
    (await h.store.leaseOf(runId))?.owner,
    queueRule(`leaseOf(runId) after ${operation}`, "the lease before"),
  ).toBe(lease?.owner);
  return error;
}
