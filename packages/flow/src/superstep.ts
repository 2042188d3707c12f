import type { Executor } from "@durable/core";
import { FlowError } from "./flow-error.js";
import { type CallScope, checkPatchesAsked, deepFreeze } from "@durable/core/runner";
import type { ChildRuns } from "./children.js";
import { nodeContext, Stopped } from "./node-context.js";
import { Call } from "./call.js";
import type { Flow, FlowNode, Graph } from "./flow.js";
import type { FlowData } from "./flow-data.js";
import { mergeUpdates, own, put } from "./merge.js";

/** What one superstep produced: the run moves on, pauses for approvals, or sleeps until the earliest wake time of its nodes. */
export type SuperstepOutcome<S> =
  | { readonly stop: "pause" }
  | { readonly stop: "sleep"; readonly until: number }
  | {
      readonly stop?: undefined;
      readonly state: S;
      readonly frontier: string[];
      readonly visits: Record<string, number>;
      readonly waiting: Record<string, string[]>;
    };

/**
 * Runs every node of the frontier concurrently against one state, merges
 * their updates, and computes the next frontier. A node error is thrown once
 * every node has settled; a call waiting on an approval pauses the superstep.
 */
export async function runSuperstep<S>(
  flow: Flow<S>,
  executor: Executor,
  scope: CallScope,
  data: FlowData<S>,
  children: ChildRuns,
): Promise<SuperstepOutcome<S>> {
  const state = data.state;
  const graph = flow.graph;
  const visits = { ...data.visits };
  for (const name of data.frontier) {
    const node = nodeOf(graph, name);
    const visited = (own(visits, name) ?? 0) + 1;
    put(visits, name, visited);
    if (visited > node.maxVisits) {
      throw new FlowError(
        `node ${JSON.stringify(name)} ran more than ${node.maxVisits} times in run ${scope.runId}; raise maxVisits or stop the loop.`,
      );
    }
  }
  const frozen = deepFreeze(structuredClone(state));
  const settled = await Promise.allSettled(
    data.frontier.map((name) => runNode(nodeOf(graph, name), frozen, executor, scope, children)),
  );
  await scope.settled(); // calls a node left running (a sibling of one that threw in Promise.all) land before the superstep ends
  const failure = settled.find((s) => s.status === "rejected" && !(s.reason instanceof Stopped));
  if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
  // A node that caught the stop itself still leaves its call pending or its sleep running: the superstep stops for it.
  if (scope.pending.length > 0) return { stop: "pause" };
  if (scope.asleep !== undefined) return { stop: "sleep", until: scope.asleep };

  const updates = data.frontier.map(
    (name, i) => [name, (settled[i] as PromiseFulfilledResult<Partial<S>>).value] as const,
  );
  const merged = mergeUpdates(state, updates, flow.reducers);
  const { frontier, waiting } = nextFrontier(graph, data, merged);
  return { state: merged, frontier, visits, waiting };
}

async function runNode<S>(
  node: FlowNode<S>,
  state: S,
  executor: Executor,
  scope: CallScope,
  children: ChildRuns,
): Promise<Partial<S>> {
  const { ctx, call } = nodeContext(node.name, executor, scope, children);
  let update: Partial<S>;
  if (node.body instanceof Call) {
    const value = await call(node.body.tool, node.body.args(state));
    update = (node.body.into === undefined ? {} : { [node.body.into]: value }) as Partial<S>;
  } else update = (await node.body(state, ctx)) ?? {};
  // A node that ends without asking a patch it answered false went past it on code without the old branch.
  checkPatchesAsked(scope, node.name);
  return update;
}

/** The nodes after a superstep: static successors, routed ones, and joins whose every source has arrived. */
function nextFrontier<S>(
  graph: Graph<S>,
  data: FlowData<S>,
  state: S,
): { frontier: string[]; waiting: Record<string, string[]> } {
  const next: string[] = [];
  const waiting: Record<string, string[]> = Object.fromEntries(
    Object.entries(data.waiting).map(([k, v]) => [k, [...v]]),
  );
  const add = (name: string) => {
    if (!next.includes(name)) next.push(name);
  };
  for (const name of data.frontier) {
    const successors = graph.successors.get(name);
    if (successors === undefined) throw new FlowError(`Node ${JSON.stringify(name)} is not in the graph.`);
    successors.to.forEach(add);
    for (const { route } of successors.routers) {
      const routed = route(state);
      for (const target of typeof routed === "string" ? [routed] : routed) {
        if (!graph.nodes.has(target))
          throw new FlowError(
            `the router after ${JSON.stringify(name)} returned the unknown node ${JSON.stringify(target)}.`,
          );
        add(target);
      }
    }
    for (const join of graph.joins.filter((j) => j.from.includes(name))) {
      const arrived = new Set([...(own(waiting, join.to) ?? []), name]);
      if (join.from.every((source) => arrived.has(source))) {
        delete waiting[join.to];
        add(join.to);
      } else put(waiting, join.to, [...arrived].sort());
    }
  }
  return { frontier: next, waiting };
}

function nodeOf<S>(graph: Graph<S>, name: string): FlowNode<S> {
  const node = graph.nodes.get(name);
  if (node === undefined) throw new FlowError(`the checkpoint names the unknown node ${JSON.stringify(name)}.`);
  return node;
}
