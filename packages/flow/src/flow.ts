import { createHash } from "node:crypto";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Identity, JsonValue, RunVersion } from "@durable/core";
import type { EventWait, WaitOptions } from "@durable/core/runner";
import { FlowError } from "./flow-error.js";
import {
  assertStorableText,
  canonicalJson,
  checkOptions,
  checkRunVersion,
  type OptionTable,
} from "@durable/core/runner";
import { Call } from "./call.js";

/** Options of `ctx.startChild`. */
export interface ChildOptions {
  /** The child's run id (default: derived from the parent's run id and the start's call identity). */
  readonly runId?: string;
  /**
   * Start it and go on without waiting: `startChild` gives `{ runId }`, and
   * the child is not cancelled with its parent (default: the node waits for
   * the child's end, and a cancel of the parent cancels it).
   */
  readonly detached?: boolean;
}

/** What a workflow's run holds: its input, and once its function returned, what it returned. */
export interface WorkflowState<I, O> {
  readonly input: I;
  readonly output?: O;
}

/** A workflow (`workflow`), as the types that give its output know it. */
export type WorkflowOf<I, O> = Flow<WorkflowState<I, O>> & { readonly workflow: true };

/** What a function node gets besides the state. */
export interface NodeContext extends Identity {
  readonly runId: string;
  /**
   * Calls a tool through the call log: replayed on recovery when it already finished. Its result is plain
   * JSON, or what the runner's codec decodes (name its type: `ctx.call<Date>(…)`).
   */
  call<T = JsonValue>(tool: string, args: JsonValue): Promise<T>;
  /**
   * Sleeps `ms` (at most 3e14), durably: the wake time is recorded once and
   * the run is saved asleep, holding no worker or timer (the store keeps its
   * lease for the sleep), until a worker (`startWorker`) wakes it then and
   * runs the superstep again, its finished calls replayed and this sleep
   * passed. Call it before the effects it should delay: the node's code
   * before it runs again on waking, and its calls after it wait for the wake
   * even where its code catches the stop.
   */
  sleep(ms: number): Promise<void>;
  /** Sleeps until `until` (a `Date`, or ms since the epoch; at most 3e14 ms from now), as `sleep` does. */
  sleepUntil(until: Date | number): Promise<void>;
  /**
   * Asks whether this node runs patch `id` (1 to 200 characters), for code
   * changed while runs are in flight: `if (await ctx.patched("v2")) { new }
   * else { old }`. True for a node that reaches it on this code, false for one
   * whose earlier attempt, on the code before, already went past it (the log
   * holds its calls after this point): it goes on with the old branch. The
   * answer is recorded the first time and replays. Keep the old branch until
   * every run that took it has ended: a node whose log holds a false answer
   * its code no longer asks fails with `PatchRemoved`.
   */
  patched(id: string): Promise<boolean>;
  /**
   * Waits for the next event named `name` sent to this run (`sendEvent`), at
   * most `timeoutMs`: gives `{ status: "received", payload, key }`, or
   * `{ status: "timeout" }` once the timeout passed with none. Each event is
   * taken by one wait, once; one sent before the wait is kept until a wait
   * takes it. While none has come the run is saved waiting, as a sleep is,
   * and the next event sent wakes it: the superstep runs again, its finished
   * calls and waits replayed.
   */
  waitForEvent(name: string, options?: WaitOptions): Promise<EventWait>;
  /**
   * Starts a child run of `flow` (a `Flow` or a `workflow`) from `input`,
   * once however often this node runs again (its run id is derived from this
   * run's and the start's call identity, unless `runId` names it), and waits
   * for it durably: the run is saved waiting until the child ended, holding
   * nothing. Gives a workflow's output or a flow's final state; a child that
   * failed or was cancelled rejects with `ChildRunFailed`. A cancel of this
   * run cancels the child. The child is driven by the workers that serve its
   * flow. Fan out with `Promise.all`. With `detached: true` it gives
   * `{ runId }` at once, and the child lives on its own.
   */
  startChild<C>(
    flow: Flow<C>,
    input: unknown,
    options: ChildOptions & { readonly detached: true },
  ): Promise<{ runId: string }>;
  startChild<I, O>(
    flow: WorkflowOf<I, O>,
    input: I,
    options?: ChildOptions & { readonly detached?: false },
  ): Promise<O>;
  startChild<C>(flow: Flow<C>, input: unknown, options?: ChildOptions & { readonly detached?: false }): Promise<C>;
}

/** A function node: reads the state, may call tools, returns the fields it changes. Must be deterministic. */
// biome-ignore lint/suspicious/noConfusingVoidType: a node that changes nothing may return nothing at all
export type NodeFn<S> = (state: S, ctx: NodeContext) => Partial<S> | void | Promise<Partial<S> | void>;

/** A conditional edge: returns the names of the next nodes (none ends that branch). */
export type Router<S> = (state: S) => string | readonly string[];

/** Combines two writes of one field in one superstep, for fields that several nodes may write at once. */
export type Reducers<S> = { readonly [K in keyof S]?: (current: S[K], update: S[K]) => S[K] };

/** Options of a flow. */
export interface FlowOptions<S> {
  /** Any Standard Schema (zod, valibot, arktype): the input and every merged update are validated with it. */
  readonly state: StandardSchemaV1<unknown, S>;
  /** Fields that several nodes of one superstep may write, and how their writes combine. */
  readonly reducers?: Reducers<S>;
  /** How often a node may run in one run before the run stops with `FlowError`; default 25. */
  readonly maxVisits?: number;
  /**
   * The version of this flow's code (`"2026-12-05"` or a number): every run records the version it started on, and
   * only a runner given that version goes on with it, so a worker serves the old code's runs beside the new
   * (see docs/protocol.md, "Versions"). Default: none.
   */
  readonly version?: RunVersion;
}

const FLOW_OPTIONS: OptionTable<FlowOptions<unknown>> = {
  state: true,
  reducers: "object",
  maxVisits: true,
  version: true,
};

/** Options of `Flow.node`. */
export interface NodeOptions {
  /** How often the node may run in one run (default: the flow's `maxVisits`). */
  readonly maxVisits?: number;
}

const NODE_OPTIONS: OptionTable<NodeOptions> = { maxVisits: true };

/** Options of `Flow.edge`. */
export interface EdgeOptions {
  /** A router's possible targets, checked with the graph. */
  readonly targets?: readonly string[];
}

const EDGE_OPTIONS: OptionTable<EdgeOptions> = { targets: true };

/** A node of the graph. */
export interface FlowNode<S> {
  readonly name: string;
  readonly body: Call<S> | NodeFn<S>;
  readonly maxVisits: number;
}

/** The outgoing edges of one node. */
export interface Successors<S> {
  readonly to: readonly string[];
  readonly routers: ReadonlyArray<{ readonly route: Router<S>; readonly targets: readonly string[] | undefined }>;
}

/** A join: `to` runs once every node of `from` has run since it last ran. */
export interface Join {
  readonly from: readonly string[];
  readonly to: string;
}

/** The checked graph a runner executes. */
export interface Graph<S> {
  readonly entry: string;
  readonly nodes: ReadonlyMap<string, FlowNode<S>>;
  readonly successors: ReadonlyMap<string, Successors<S>>;
  readonly joins: readonly Join[];
  readonly ends: ReadonlySet<string>;
  /** sha256 over the structure (names, kinds, tools, `into`, edges, ends), not the text of closures. */
  readonly digest: string;
}

const DEFAULT_MAX_VISITS = 25;

/**
 * A durable flow: a graph of nodes over a validated state. The first node
 * added is the entry. Build it with `node`, `edge` and `end`; it is checked
 * (unknown nodes, duplicate names, no reachable end) when first run, or by `graph`.
 */
export class Flow<S> {
  readonly name: string;
  /** The version its runs record (`FlowOptions.version`). */
  readonly version: RunVersion | undefined;
  readonly schema: StandardSchemaV1<unknown, S>;
  readonly reducers: Reducers<S>;
  readonly #maxVisits: number;
  readonly #nodes = new Map<string, FlowNode<S>>();
  readonly #edges: Array<{ from: string; to: string }> = [];
  readonly #routers: Array<{ from: string; route: Router<S>; targets: readonly string[] | undefined }> = [];
  readonly #joins: Join[] = [];
  readonly #ends = new Set<string>();
  readonly #problems: string[] = [];
  #graph: Graph<S> | undefined;

  constructor(name: string, options: FlowOptions<S>) {
    if (typeof name !== "string" || name.length === 0 || name.length > 128) {
      throw new FlowError("A flow needs a name of 1 to 128 characters.");
    }
    assertStorableText(name, `The flow name ${JSON.stringify(name)}`);
    checkOptions(`Flow ${JSON.stringify(name)}`, options, FLOW_OPTIONS);
    this.name = name;
    this.version = checkRunVersion(`Flow ${JSON.stringify(name)}`, options.version);
    this.schema = options.state;
    this.reducers = options.reducers ?? {};
    this.#maxVisits = options.maxVisits ?? DEFAULT_MAX_VISITS;
  }

  /** Adds a node: a `Call`, or an async function `(state, ctx) => Partial<State>`. */
  node(name: string, body: Call<S> | NodeFn<S>, options: NodeOptions = {}): this {
    checkOptions(`Flow ${JSON.stringify(this.name)}: node ${JSON.stringify(name)}`, options, NODE_OPTIONS);
    this.#change();
    if (this.#nodes.has(name)) this.#problems.push(`the node name ${JSON.stringify(name)} is used twice`);
    if (!(body instanceof Call) && typeof body !== "function") {
      this.#problems.push(`node ${JSON.stringify(name)} must be a Call or a function`);
    }
    this.#nodes.set(name, { name, body, maxVisits: options.maxVisits ?? this.#maxVisits });
    return this;
  }

  /**
   * Adds edges. `from` → `to` for one or several targets (several run in the
   * same superstep: a fan-out); `to` as a router function is a conditional
   * edge (list its `targets` to have them checked); several `from` nodes with
   * one target is a join, which runs once all of them have run.
   */
  edge(from: string | readonly string[], to: string | readonly string[] | Router<S>, options: EdgeOptions = {}): this {
    checkOptions(`Flow ${JSON.stringify(this.name)}: edge`, options, EDGE_OPTIONS);
    this.#change();
    if (typeof from !== "string") {
      if (typeof to !== "string") this.#problems.push("a join needs exactly one target node");
      else this.#joins.push({ from: [...from], to });
      return this;
    }
    if (typeof to === "function") this.#routers.push({ from, route: to, targets: options.targets });
    else for (const target of typeof to === "string" ? [to] : to) this.#edges.push({ from, to: target });
    return this;
  }

  /** Marks nodes after which the run may end. */
  end(...names: string[]): this {
    this.#change();
    for (const name of names) this.#ends.add(name);
    return this;
  }

  /** The state a run starts from, given what `run` was given: the input itself (a `Workflow` wraps it). */
  initialState(input: unknown): unknown {
    return input;
  }

  /** The checked graph. `FlowError` lists every problem of an invalid one. */
  get graph(): Graph<S> {
    this.#graph ??= this.#compile();
    return this.#graph;
  }

  /** The graph digest stored in every checkpoint: a changed graph cannot recover an old run. */
  get digest(): string {
    return this.graph.digest;
  }

  #change(): void {
    this.#graph = undefined;
  }

  #compile(): Graph<S> {
    const problems = [...this.#problems];
    const entry = this.#nodes.keys().next().value;
    if (entry === undefined) problems.push("it has no nodes");
    const known = (name: string, where: string) => {
      if (!this.#nodes.has(name)) problems.push(`${where} names the unknown node ${JSON.stringify(name)}`);
    };
    for (const { from, to } of this.#edges) {
      known(from, "an edge");
      known(to, "an edge");
    }
    for (const { from, targets } of this.#routers) {
      known(from, "a conditional edge");
      for (const target of targets ?? []) known(target, "a conditional edge");
    }
    for (const join of this.#joins) for (const name of [...join.from, join.to]) known(name, "a join");
    for (const name of this.#ends) known(name, "end()");

    const successors = new Map<string, Successors<S>>();
    for (const name of this.#nodes.keys()) {
      successors.set(name, {
        to: this.#edges.filter((e) => e.from === name).map((e) => e.to),
        routers: this.#routers.filter((r) => r.from === name),
      });
    }
    for (const [name, next] of successors) {
      const joined = this.#joins.some((j) => j.from.includes(name));
      if (next.to.length === 0 && next.routers.length === 0 && !joined && !this.#ends.has(name)) {
        problems.push(`node ${JSON.stringify(name)} has no outgoing edge and is not an end`);
      }
    }
    if (entry !== undefined && problems.length === 0 && !this.#reachesEnd(entry, successors)) {
      problems.push("no end node can be reached from the entry");
    }
    if (problems.length > 0)
      throw new FlowError(`Flow ${JSON.stringify(this.name)} is invalid: ${problems.join("; ")}.`);
    if (entry === undefined) throw new FlowError(`Flow ${JSON.stringify(this.name)} is invalid: it has no entry node.`);
    return {
      entry,
      nodes: this.#nodes,
      successors,
      joins: this.#joins,
      ends: this.#ends,
      digest: this.#digest(entry),
    };
  }

  #reachesEnd(entry: string, successors: Map<string, Successors<S>>): boolean {
    const seen = new Set<string>([entry]);
    const queue = [entry];
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const next = successors.get(name);
      if (next === undefined) continue;
      if (this.#ends.has(name) || next.routers.some((r) => r.targets === undefined)) return true;
      const targets = [
        ...next.to,
        ...next.routers.flatMap((r) => r.targets ?? []),
        ...this.#joins.filter((j) => j.from.includes(name)).map((j) => j.to),
      ];
      for (const target of targets) {
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
      }
    }
    return false;
  }

  #digest(entry: string): string {
    const structure = {
      name: this.name,
      entry,
      nodes: [...this.#nodes.values()].map((node) =>
        node.body instanceof Call
          ? {
              name: node.name,
              kind: "call",
              tool: node.body.tool,
              into: node.body.into ?? null,
              maxVisits: node.maxVisits,
            }
          : { name: node.name, kind: "function", maxVisits: node.maxVisits },
      ),
      edges: this.#edges.map((e) => [e.from, e.to]).sort(),
      routers: this.#routers.map((r) => [r.from, [...(r.targets ?? [])].sort()]),
      joins: this.#joins.map((j) => [[...j.from].sort(), j.to]),
      ends: [...this.#ends].sort(),
    };
    return createHash("sha256").update(canonicalJson(structure)).digest("base64url");
  }
}
