import { InvalidInput } from "../base/errors.js";
import { checkOptions, isObject, type OptionTable } from "../base/option-checks.js";
import type { CheckpointStore, QueuePlace } from "../store/contract.js";
import { checkQueuePlace } from "../store/queues.js";

/** A queue's limits, kept by the store across the whole fleet (see docs/protocol.md, "Queues"). */
export interface QueueOptions {
  /** At most this many of its runs hold a lease at once, whatever the number of workers. */
  readonly concurrency?: number;
  /** At most this many of its runs of one concurrency key (a customer, a tenant) hold a lease at once. */
  readonly perKey?: number;
  /** At most `limit` of its runs start in any `windowMs`, by the store's clock. */
  readonly rate?: { readonly limit: number; readonly windowMs: number };
}

/** A queue runs are started on (`runner.start(flow, input, { queue })`) and workers serve (`startWorker({ queues })`). */
export interface Queue extends QueueOptions {
  readonly name: string;
}

/** Where a run started with `start` waits its turn: the start's options. */
export interface QueueStart {
  /** The queue it waits on: it is claimed by the workers that serve the queue, within its limits. */
  readonly queue?: Queue;
  /** Higher goes first (default 0); FIFO within a priority. A whole number. */
  readonly priority?: number;
  /** The run's concurrency key: the queue's `perKey` limits the runs of one key. */
  readonly concurrencyKey?: string;
}

const QUEUE_OPTIONS: OptionTable<QueueOptions> = { concurrency: true, perKey: true, rate: true };

/**
 * A queue with its limits, checked (`InvalidInput`): every run started on it
 * carries them sealed, and the store enforces them on every claim, so each
 * process that starts runs on one queue should define it alike.
 */
export function defineQueue(name: string, options: QueueOptions = {}): Queue {
  checkOptions("defineQueue", options, QUEUE_OPTIONS);
  const queue: Queue = { ...options, name };
  checkQueuePlace(placeOf(queue, 0));
  return Object.freeze(queue);
}

/** The place a start gives its run's step 0, or undefined for a run started on no queue. */
export function queuePlace(where: string, start: QueueStart): QueuePlace | undefined {
  const { queue, priority, concurrencyKey } = start;
  if (queue === undefined) {
    if (priority !== undefined || concurrencyKey !== undefined)
      throw new InvalidInput(`${where}: priority and concurrencyKey order a queue's runs; give the run a queue too.`);
    return undefined;
  }
  if (!isQueue(queue)) throw new InvalidInput(`${where}: queue must be a queue made by defineQueue(name, limits).`);
  const place = placeOf(queue, priority ?? 0, concurrencyKey);
  checkQueuePlace(place);
  return place;
}

/** True for a `Queue`: an object with a name. */
export function isQueue(value: unknown): value is Queue {
  return isObject(value) && typeof value["name"] === "string";
}

function placeOf(queue: Queue, priority: number, key?: string): QueuePlace {
  const { name, concurrency, perKey, rate } = queue;
  return {
    queue: name,
    priority,
    ...(key === undefined ? {} : { key }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(perKey === undefined ? {} : { perKey }),
    ...(rate === undefined ? {} : { rate }),
  };
}

/** `InvalidInput` for a queued start on a store without the queues capability: it could not keep the queue's limits. */
export function checkQueuesCapability(where: string, store: CheckpointStore, place: QueuePlace | undefined): void {
  if (place !== undefined && store.listQueued === undefined)
    throw new InvalidInput(
      `${where}: its store has no queues capability (listQueued), so it cannot keep queue ${JSON.stringify(place.queue)}'s limits; start the run without a queue, or on a store that has it.`,
    );
}

/**
 * How many claimable runs wait in each of `queues`, over every store that may hold them (`listQueued`): what the
 * gauge `durable.queue.depth` reports. A store without the capability counts none.
 */
export async function queueDepths(
  queues: readonly Queue[],
  stores: Iterable<CheckpointStore>,
): Promise<Map<string, number>> {
  const depths = new Map<string, number>();
  for (const { name } of queues) {
    let count = 0;
    for (const store of new Set(stores)) for await (const _ of store.listQueued?.(name) ?? []) count += 1;
    depths.set(name, count);
  }
  return depths;
}
