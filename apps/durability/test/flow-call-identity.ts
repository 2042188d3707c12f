/**
 * Shared by the call-identity tests and their child process: the node shapes a
 * case is made of, the tools (which write an effects file), the two processes
 * (one killed at a fault point, one recovering), and the verdict.
 * It runs on the SQLite store: it needs a store that outlives a process, and
 * @durable/flow cannot depend on one (a store's own conformance run depends
 * on flow, through the kit).
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { idempotencyKey, type JsonValue, ToolRegistry } from "@durable/core";
import { faultPoint, type FaultPoint } from "@durable/core/internal";
import { canonicalJson, readCallLog, Sealer } from "@durable/core/runner";
import { Flow, type NodeContext } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

export const KEY = "flow-tests-key-0123456789abcdef-xyz";

/** The tools, and whether each is idempotent. */
const TOOLS = { price: true, lookup: true, charge: false, mail: false } as const;
export type Tool = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as Tool[];

export interface CallSpec {
  readonly tool: Tool;
  readonly n: number;
}

/** One way of issuing calls. */
export type Block =
  | { readonly kind: "call"; readonly call: CallSpec }
  | { readonly kind: "all"; readonly calls: readonly CallSpec[] }
  /** `call(first).then((r) => call(next, { from: r }))` */
  | { readonly kind: "chain"; readonly first: CallSpec; readonly next: Tool }
  /** `Promise.all(items.map(async (i) => charge({ from: await price({ item: i }) })))` */
  | { readonly kind: "items"; readonly items: readonly number[] }
  /** The same call issued twice at once. */
  | { readonly kind: "twice"; readonly call: CallSpec }
  /** `offers = lookup(); charge({ product: Object.keys(offers)[0] })`: code that reads a result's key order. */
  | { readonly kind: "firstKey"; readonly n: number };

/** A node: its steps run one after another; the blocks of one step run at once. */
export type NodeShape = ReadonlyArray<readonly Block[]>;

/** Per tool, how long its executions in one process take, in ms: the k-th takes `[k % length]`. */
export type Latencies = Readonly<Record<Tool, readonly number[]>>;

/** Fault points at which the killed call is in doubt: it started, and its result was not recorded. */
export const IN_CALL_POINTS: readonly FaultPoint[] = ["call.after-started", "tool.inside", "call.before-done"];
/** Fault points reached while no call is in flight (a superstep saves once its calls settled): nothing can be in doubt. */
// Not the superstep's checkpoint: the last calls' `done` records wait for its commit, so a kill there leaves them in doubt.
const BETWEEN_SUPERSTEPS: readonly FaultPoint[] = ["claim.before-log-read"];

export interface CallCase {
  /** The supersteps, each the nodes that run in it; the first holds only the entry node. */
  readonly layers: ReadonlyArray<readonly NodeShape[]>;
  readonly latencies: readonly [first: Latencies, recovery: Latencies];
  /** Where the first process dies: the point, and which time it is reached. */
  readonly kill: { readonly point: FaultPoint; readonly hit: number };
}

/** What a node asked for and what it got back. */
export interface Seen {
  readonly tool: string;
  readonly args: JsonValue;
  readonly got: JsonValue;
}

/** Every tool returns this, so a call's own result is known from what it asked. */
function resultOf(tool: string, args: JsonValue): JsonValue {
  return { tool, args };
}

type Ask = (tool: string, args: JsonValue) => Promise<Seen>;

async function runBlock(ask: Ask, block: Block): Promise<Seen[]> {
  switch (block.kind) {
    case "call":
      return [await ask(block.call.tool, { n: block.call.n })];
    case "all":
      return Promise.all(block.calls.map((c) => ask(c.tool, { n: c.n })));
    case "twice":
      return Promise.all([ask(block.call.tool, { n: block.call.n }), ask(block.call.tool, { n: block.call.n })]);
    case "chain":
      return ask(block.first.tool, { n: block.first.n }).then(async (first) => [
        first,
        await ask(block.next, { from: first.got }),
      ]);
    case "firstKey": {
      const offers = await ask("lookup", { n: block.n });
      return [offers, await ask("charge", { product: Object.keys(offers.got as object)[0]! })];
    }
    case "items": {
      const charged = await Promise.all(
        block.items.map(async (item) => {
          const price = await ask("price", { item });
          return [price, await ask("charge", { from: price.got })];
        }),
      );
      return charged.flat();
    }
  }
}

/** Runs a node's shape, listing every call in the order the shape names them (not the order they finish in). */
async function runShape(
  shape: NodeShape,
  call: (tool: string, args: JsonValue) => Promise<JsonValue>,
): Promise<Seen[]> {
  const ask: Ask = async (tool, args) => ({ tool, args, got: await call(tool, args) });
  const seen: Seen[] = [];
  for (const step of shape)
    for (const calls of await Promise.all(step.map((b) => runBlock(ask, b)))) seen.push(...calls);
  return seen;
}

/** What a node should end with: every call given its own result, as the log keeps it. */
export function expectedOf(shape: NodeShape): Promise<Seen[]> {
  return runShape(shape, async (tool, args) => JSON.parse(canonicalJson(resultOf(tool, args))) as JsonValue);
}

const State = z.object({
  seen: z.record(z.string(), z.array(z.object({ tool: z.string(), args: z.json(), got: z.json() }))),
});
type State = z.infer<typeof State>;
export const INPUT: State = { seen: {} };
export const RUN_ID = "call-identity-1";

const nodeName = (layer: number, index: number) => `s${layer}n${index}`;

/** The case's flow: each layer's nodes lead to every node of the next (a fan-out); the last layer ends. */
export function flowOf(c: CallCase): Flow<State> {
  const flow = new Flow("call-identity", { state: State, reducers: { seen: (a, b) => ({ ...a, ...b }) } });
  for (const [i, layer] of c.layers.entries()) {
    for (const [j, shape] of layer.entries()) {
      const name = nodeName(i, j);
      flow.node(name, async (_state, ctx: NodeContext) => ({
        seen: { [name]: await runShape(shape, (tool, args) => ctx.call(tool, args)) },
      }));
    }
  }
  for (const [i, layer] of c.layers.entries()) {
    const next = c.layers[i + 1]?.map((_, j) => nodeName(i + 1, j));
    for (const j of layer.keys()) {
      if (next === undefined) flow.end(nodeName(i, j));
      else flow.edge(nodeName(i, j), next);
    }
  }
  return flow;
}

/** One real execution of a tool, as the tool itself wrote it down. */
interface Effect {
  readonly tool: Tool;
  readonly args: JsonValue;
  readonly key: string;
  readonly pid: number;
}

/** The tools: each appends its effect (with its idempotency key) before it waits out its latency. */
export function toolsFor(latencies: Latencies, effects: string): ToolRegistry {
  const executions = new Map<Tool, number>();
  const registry = new ToolRegistry();
  for (const tool of TOOL_NAMES) {
    const fn = async (args: JsonValue) => {
      const k = executions.get(tool) ?? 0;
      executions.set(tool, k + 1);
      const effect: Effect = { tool, args, key: idempotencyKey(), pid: process.pid };
      appendFileSync(effects, `${JSON.stringify(effect)}\n`);
      faultPoint("tool.inside");
      const ms = latencies[tool][k % latencies[tool].length]!;
      await new Promise((resolve) => setTimeout(resolve, ms));
      return resultOf(tool, args);
    };
    registry.tool(tool, fn, { idempotent: TOOLS[tool] });
  }
  return registry;
}

/** What the recovering process prints. */
export interface Recovered {
  readonly status: string;
  readonly state: State;
  /** `[tool, why]` of every call `RecoveryNeedsDecision` reported. */
  readonly inDoubt: ReadonlyArray<readonly [string, string]>;
}

/** Both processes of one case, and what they left. */
export interface Outcome {
  readonly killed: boolean;
  readonly firstPid: number;
  /** Per tool, how many of its calls the first process left started with no result in the log. */
  readonly unfinished: ReadonlyMap<string, number>;
  readonly recovered: Recovered;
  readonly effects: readonly Effect[];
}

const CHILD = fileURLToPath(new URL("./flow-call-identity-child.ts", import.meta.url));
const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const CHILD_TIMEOUT_MS = 30_000;

/** Paths of one case's temp dir, as the child reads them. */
export const casePaths = (dir: string) => ({
  case: join(dir, "case.json"),
  db: join(dir, "runs.db"),
  effects: join(dir, "effects.jsonl"),
});

/** Runs the case in a child killed at its fault point, then recovers it in a second child. */
export async function crashAndRecover(c: CallCase): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), "durable-call-identity-"));
  try {
    const paths = casePaths(dir);
    writeFileSync(paths.case, JSON.stringify(c));
    const first = await child("run", dir, `${c.kill.point}@${c.kill.hit}`);
    if (first.signal !== "SIGKILL" && first.code !== 0)
      throw new Error(`the first process failed (${first.code}): ${first.stderr}`);
    const unfinished = await unfinishedCalls(paths.db);
    const second = await child("recover", dir, undefined);
    if (second.code !== 0)
      throw new Error(`the recovering process failed (${second.code ?? second.signal}): ${second.stderr}`);
    const effects = existsSync(paths.effects) ? readFileSync(paths.effects, "utf8") : "";
    return {
      killed: first.signal === "SIGKILL",
      firstPid: first.pid,
      unfinished,
      recovered: JSON.parse(second.stdout.trim().split("\n").at(-1)!) as Recovered,
      effects: effects
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Effect),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Per tool, its started calls minus its done ones in the log a process left.
 * Counted by tool, not by call id, so it holds whatever identity calls get.
 */
async function unfinishedCalls(db: string): Promise<Map<string, number>> {
  const store = new SQLiteCheckpointStore(db);
  try {
    const counts = new Map<string, number>();
    for (const record of await readCallLog(store, Sealer.withKeys(KEY), RUN_ID, [])) {
      const change = record.kind === "started" ? 1 : record.kind === "done" ? -1 : 0;
      counts.set(record.tool, (counts.get(record.tool) ?? 0) + change);
    }
    return counts;
  } finally {
    await store.close();
  }
}

interface Exit {
  readonly pid: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

function child(mode: "run" | "recover", dir: string, faultPointValue: string | undefined): Promise<Exit> {
  const env = { ...process.env };
  delete env.DURABLE_FAULT_POINT;
  if (faultPointValue !== undefined) env.DURABLE_FAULT_POINT = faultPointValue;
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, mode, dir], {
    cwd: PACKAGE,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`the ${mode} process did not end in ${CHILD_TIMEOUT_MS} ms; stderr: ${stderr}`));
    }, CHILD_TIMEOUT_MS);
    proc.once("error", reject);
    proc.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ pid: proc.pid!, code, signal, stdout, stderr });
    });
  });
}

const callText = (tool: string, args: JsonValue) => `${tool} ${canonicalJson(args)}`;
const countUp = (counts: Map<string, number>, key: string, by = 1) => counts.set(key, (counts.get(key) ?? 0) + by);

/** Every way the outcome breaks the promise that each call keeps its own identity across a crash; empty when it holds. */
export async function problemsOf(c: CallCase, outcome: Outcome): Promise<string[]> {
  const problems: string[] = [];
  if (outcome.recovered.status !== "done") problems.push(`the run ended ${outcome.recovered.status}, not done`);
  const asked = new Map<string, number>();
  for (const [i, layer] of c.layers.entries()) {
    for (const [j, shape] of layer.entries()) {
      const expected = await expectedOf(shape);
      for (const call of expected) countUp(asked, callText(call.tool, call.args));
      const seen = outcome.recovered.state.seen[nodeName(i, j)];
      if (canonicalJson(seen ?? null) !== canonicalJson(expected))
        problems.push(`node ${nodeName(i, j)} got ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
    }
  }
  const inDoubt = new Map<string, number>();
  for (const [tool] of outcome.recovered.inDoubt) countUp(inDoubt, tool);
  return [...problems, ...effectProblems(outcome, asked, inDoubt), ...inDoubtProblems(c, outcome, inDoubt)];
}

/** Each call ran under one key of its own; a call that is not idempotent ran once, and again only when recovery reported its tool in doubt. */
function effectProblems(
  { effects, firstPid }: Outcome,
  asked: ReadonlyMap<string, number>,
  inDoubt: ReadonlyMap<string, number>,
): string[] {
  const problems: string[] = [];
  const byKey = new Map<string, Effect[]>();
  const keysOf = new Map<string, Set<string>>();
  for (const effect of effects) {
    const text = callText(effect.tool, effect.args);
    if (!asked.has(text)) problems.push(`${text} ran, but no node asked for it`);
    byKey.set(effect.key, [...(byKey.get(effect.key) ?? []), effect]);
    keysOf.set(text, (keysOf.get(text) ?? new Set()).add(effect.key));
  }
  for (const [text, times] of asked) {
    const keys = keysOf.get(text)?.size ?? 0;
    if (keys !== times)
      problems.push(`${text} was asked for ${times} time(s) but ran under ${keys} idempotency key(s)`);
  }
  const extraRuns = new Map<string, number>();
  for (const [key, runs] of byKey) {
    const calls = new Set(runs.map((e) => callText(e.tool, e.args)));
    if (calls.size > 1) problems.push(`one idempotency key was given to different calls: ${[...calls].join(" and ")}`);
    const { tool, args } = runs[0]!;
    if (TOOLS[tool] || runs.length === 1) continue;
    countUp(extraRuns, tool, runs.length - 1);
    if (runs.length > 2 || runs[0]!.pid !== firstPid || runs[1]!.pid === firstPid) {
      problems.push(
        `${callText(tool, args)} (key ${key.slice(0, 8)}) ran ${runs.length} times, in processes ${runs.map((e) => e.pid).join(", ")}`,
      );
    }
  }
  for (const [tool, extra] of extraRuns) {
    const reported = inDoubt.get(tool) ?? 0;
    if (extra > reported)
      problems.push(
        `${tool} ran ${extra} more time(s) than once per call, but recovery reported ${reported} ${tool} call(s) in doubt`,
      );
  }
  return problems;
}

/**
 * Recovery reports as in doubt exactly the calls the first process left with
 * no result. A call may have run and still be in doubt, so the log, not the
 * effects, says which: any kill can catch other calls in flight.
 */
function inDoubtProblems(
  c: CallCase,
  { killed, unfinished, effects, firstPid, recovered }: Outcome,
  inDoubt: ReadonlyMap<string, number>,
): string[] {
  const problems: string[] = [];
  for (const tool of TOOL_NAMES.filter((t) => !TOOLS[t])) {
    const reported = inDoubt.get(tool) ?? 0;
    const left = unfinished.get(tool) ?? 0;
    if (reported !== left)
      problems.push(
        `recovery reported ${reported} ${tool} call(s) in doubt; the first process left ${left} with no result`,
      );
  }
  for (const tool of inDoubt.keys())
    if (TOOLS[tool as Tool] !== false)
      problems.push(`recovery reported ${tool} in doubt, which is idempotent or unknown`);
  if (inDoubt.size > 0 && (!killed || BETWEEN_SUPERSTEPS.includes(c.kill.point))) {
    problems.push(
      `recovery reported ${JSON.stringify(recovered.inDoubt)} in doubt after ${killed ? `a kill at ${c.kill.point}, when no call is in flight` : "no kill"}`,
    );
  }
  // The call killed inside its tool is the one whose effect the first process wrote last; it runs again under its own key.
  if (killed && c.kill.point === "tool.inside") {
    const victim = effects.filter((e) => e.pid === firstPid)[c.kill.hit - 1];
    if (victim === undefined)
      return [...problems, `the process was killed inside tool execution ${c.kill.hit}, which left no effect`];
    const text = callText(victim.tool, victim.args);
    if (!TOOLS[victim.tool] && !inDoubt.has(victim.tool))
      problems.push(`${text} was killed inside its tool, but recovery reported no ${victim.tool} call in doubt`);
    if (!effects.some((e) => e.pid !== firstPid && e.key === victim.key))
      problems.push(`${text} was killed inside its tool and did not run again under its own idempotency key`);
  }
  return problems;
}
