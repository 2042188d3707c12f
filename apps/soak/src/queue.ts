/**
 * The queue soak's parts: the queue its runs are started on, each run's
 * customer (its concurrency key), and the verdict on the queue's limits from
 * the tools' ledger: at no moment more runs inside a tool than the queue's
 * concurrency, nor two runs of one customer.
 */
import { defineQueue, type Queue } from "@durable/core";
import type { Execution } from "./ledger.js";

/** The limits of the soak's queue and how many customers its runs spread over. */
export interface QueueSoak {
  readonly concurrency: number;
  readonly perKey: number;
  readonly customers: number;
}

export const QUEUE_SOAK_DEFAULTS: QueueSoak = { concurrency: 5, perKey: 1, customers: 50 };

/** The soak's queue, as the starter and every worker define it. */
export function soakQueue(limits: QueueSoak): Queue {
  return defineQueue("soak", { concurrency: limits.concurrency, perKey: limits.perKey });
}

/** Run k's customer: the soak's runs go round the customers. */
export function customerOf(k: number, limits: QueueSoak): string {
  return `customer-${k % limits.customers}`;
}

/** The most runs inside a tool at once, and the most of one customer, with when each was reached. */
export interface QueueFigures {
  readonly mostInside: number;
  readonly mostOfOneCustomer: number;
}

/**
 * The limits as the tools saw them. An execution a kill cut short (no end in
 * the ledger) ends when its worker died: nothing ran after. Intervals of one
 * run count once (a run is inside a tool, whichever).
 */
export function queueFigures(
  executions: readonly Execution[],
  deaths: readonly { readonly worker: string; readonly diedAt: number }[],
  customerOfRun: (runId: string) => string,
): QueueFigures {
  const diedAt = new Map(deaths.map((death) => [death.worker, death.diedAt]));
  const edges: { at: number; runId: string; delta: 1 | -1 }[] = [];
  for (const e of executions) {
    const end = e.end ?? diedAt.get(e.worker) ?? Number.POSITIVE_INFINITY;
    edges.push({ at: e.start, runId: e.runId, delta: 1 }, { at: end, runId: e.runId, delta: -1 });
  }
  // At one moment an end goes before a start: a tool that ended as the next began did not overlap it.
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  const openByRun = new Map<string, number>();
  const insideByCustomer = new Map<string, number>();
  let inside = 0;
  let [mostInside, mostOfOneCustomer] = [0, 0];
  for (const edge of edges) {
    const before = openByRun.get(edge.runId) ?? 0;
    const after = before + edge.delta;
    openByRun.set(edge.runId, after);
    const customer = customerOfRun(edge.runId);
    if (before === 0 && after === 1) {
      inside += 1;
      insideByCustomer.set(customer, (insideByCustomer.get(customer) ?? 0) + 1);
    } else if (before === 1 && after === 0) {
      inside -= 1;
      insideByCustomer.set(customer, (insideByCustomer.get(customer) ?? 0) - 1);
    }
    mostInside = Math.max(mostInside, inside);
    mostOfOneCustomer = Math.max(mostOfOneCustomer, insideByCustomer.get(customer) ?? 0);
  }
  return { mostInside, mostOfOneCustomer };
}

/** The violations of the queue's limits the figures show. */
export function queueViolations(figures: QueueFigures, limits: QueueSoak): string[] {
  const violations: string[] = [];
  if (figures.mostInside > limits.concurrency)
    violations.push(
      `${figures.mostInside} runs of the queue were inside a tool at once; its concurrency is ${limits.concurrency}`,
    );
  if (figures.mostOfOneCustomer > limits.perKey)
    violations.push(
      `${figures.mostOfOneCustomer} runs of one customer were inside a tool at once; the per-key limit is ${limits.perKey}`,
    );
  return violations;
}
