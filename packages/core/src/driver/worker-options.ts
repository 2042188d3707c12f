import { InvalidInput } from "../base/errors.js";
import { checkOptions, isObject, type OptionTable } from "../base/option-checks.js";
import type { ServedRuns } from "./program.js";
import { Schedule } from "./schedule.js";
import { isQueue, type Queue } from "./queue.js";
import { type WorkerLog, type WorkerLogger, workerLog } from "./worker-log.js";

/** Options of `startWorker`. */
export interface WorkerOptions {
  /** What it serves: `runner.served(flow)`, `servedToolLoops(…)`. Optional when it has schedules. */
  readonly serve?: readonly ServedRuns[];
  /**
   * Schedules it starts runs of (`runner.schedule(flow, …)`), one per tick
   * across the fleet, under its concurrency; it serves their runs too (see
   * docs/protocol.md, "Schedules").
   */
  readonly schedules?: readonly Schedule[];
  /**
   * Queues whose runs it takes (`defineQueue`), in their order (priority,
   * then FIFO) and within their limits, before any other claimable run; the
   * runs' flows and tool loops must be among those it serves.
   */
  readonly queues?: readonly Queue[];
  /** How many runs it drives at once (default 8). */
  readonly concurrency?: number;
  /** How often it looks for claimable runs while it finds some, in ms (default 1,000); jittered, and doubled up to `maxPollMs` while it finds none. */
  readonly pollMs?: number;
  /** The longest wait between looks while idle (default 10,000). */
  readonly maxPollMs?: number;
  /** How long `stop()` lets the runs it drives go on before it gives them up (default 10,000). */
  readonly stopDeadlineMs?: number;
  /** Run calls in doubt again instead of waiting for a decision. */
  readonly rerunInDoubt?: boolean;
  /** Stop on SIGTERM and SIGINT, then let the signal end the process (default true). */
  readonly stopOnSignals?: boolean;
  /**
   * Told once per run and step of each run it cannot go on with (a call in
   * doubt, a changed graph, a corrupt row), and of each tick whose run could
   * not start (the schedule's `start` threw, or the runner refused its input).
   */
  readonly onStuck?: (runId: string, error: unknown) => void;
  /**
   * Told of each run it took over that then failed (a node, a tool or the
   * model threw: the run is saved `failed` and ends), with the error that
   * failed it. A failed run is not stuck: nothing is left to decide, but
   * `retryRun` can go on from it once the cause is fixed.
   */
  readonly onFailed?: (runId: string, error: unknown) => void;
  /**
   * Where it says what it did, one line each: a run it took over, a run that
   * failed, a run it left waiting for a decision (or stuck), a lease it lost.
   * A console-shaped logger (default: `console`) gets a message; a pino-shaped
   * one (pino, bunyan: `child` and their `levels`) fields and a message; an OpenTelemetry logs
   * `Logger` (`emit`) a record. `false` says nothing.
   */
  readonly logger?: WorkerLogger;
}

const WORKER_OPTIONS: OptionTable<WorkerOptions> = {
  serve: true,
  schedules: true,
  queues: true,
  concurrency: true,
  pollMs: true,
  maxPollMs: true,
  stopDeadlineMs: true,
  rerunInDoubt: "boolean",
  stopOnSignals: "boolean",
  onStuck: "function",
  onFailed: "function",
  logger: true,
};

/** The options with their defaults; the logger as one function. */
export type ResolvedWorkerOptions = Required<Omit<WorkerOptions, "onStuck" | "onFailed" | "logger">> &
  Pick<WorkerOptions, "onStuck" | "onFailed"> & { readonly log: WorkerLog };

/** The options with their defaults, checked: `InvalidInput` (its message naming `where`) before the worker starts. */
export function checkWorkerOptions(options: WorkerOptions, where = "startWorker"): ResolvedWorkerOptions {
  checkOptions(where, options, WORKER_OPTIONS);
  const { serve = [], schedules = [], queues = [] } = options;
  if (!Array.isArray(queues) || !queues.every(isQueue))
    throw new InvalidInput(`${where}: queues must list queues, each made by defineQueue(name, limits).`);
  if (queues.length > 0 && serve.length === 0)
    throw new InvalidInput(
      `${where}: a worker that serves queues must serve their runs' flows and tool loops too (serve).`,
    );
  if (!Array.isArray(serve) || !serve.every(isServed))
    throw new InvalidInput(`${where}: serve must list what it serves, each runner.served(flow) or servedToolLoops(…).`);
  if (!Array.isArray(schedules) || !schedules.every((each) => each instanceof Schedule))
    throw new InvalidInput(`${where}: schedules must list schedules, each runner.schedule(flow, …).`);
  if (serve.length === 0 && schedules.length === 0)
    throw new InvalidInput(
      `${where}: give it something to serve: serve (runner.served(flow), servedToolLoops(…)) or schedules (runner.schedule(flow, …)).`,
    );
  const names = schedules.map((each) => each.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined)
    throw new InvalidInput(
      `${where}: two schedules are named ${JSON.stringify(twice)}; a name makes its runs' ids, so each must be its own.`,
    );
  const resolved: ResolvedWorkerOptions = {
    serve: withScheduled(serve, schedules),
    schedules,
    queues,
    concurrency: options.concurrency ?? 8,
    pollMs: options.pollMs ?? 1_000,
    maxPollMs: options.maxPollMs ?? 10_000,
    stopDeadlineMs: options.stopDeadlineMs ?? 10_000,
    rerunInDoubt: options.rerunInDoubt ?? false,
    stopOnSignals: options.stopOnSignals ?? true,
    onStuck: options.onStuck,
    onFailed: options.onFailed,
    log: workerLog(where, options.logger ?? console),
  };
  for (const name of ["concurrency", "pollMs", "maxPollMs", "stopDeadlineMs"] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < (name === "stopDeadlineMs" ? 0 : 1))
      throw new InvalidInput(`${where}: ${name} must be a whole number ≥ 1, not ${String(value)}.`);
  }
  return resolved;
}

/** What it serves, with the runs of each schedule it does not serve already: a tick's run whose worker died goes on. */
function withScheduled(serve: readonly ServedRuns[], schedules: readonly Schedule[]): readonly ServedRuns[] {
  const all = [...serve];
  for (const { served } of schedules) if (!all.some((each) => same(each, served))) all.push(served);
  return all;
}

/** True when two serve the same runs: a kind, a name and a version, in one store. */
function same(one: ServedRuns, other: ServedRuns): boolean {
  return (
    one.kind === other.kind && one.name === other.name && one.version === other.version && one.store === other.store
  );
}

function isServed(value: unknown): value is ServedRuns {
  return (
    isObject(value) &&
    typeof value["name"] === "string" &&
    typeof value["recover"] === "function" &&
    isObject(value["store"])
  );
}
