/**
 * The fault soak: the workers take the runs on a Redis and a PostgreSQL of the
 * soak's own, through a proxy, while a schedule restarts, freezes and cuts
 * them; then the same promises as the kill soak, and no store operation
 * pending longer than the store's timeout.
 */
import { alignColumns } from "@durable-apps/shared/table";
import { CutProxy } from "./proxy.js";
import { OwnPostgres, OwnRedis, signalAll, type OwnServer } from "./servers.js";
import { SOAK_DEFAULTS, soak, type Progress, type SoakReport } from "./soak.js";

export interface FaultSoakOptions {
  readonly runs: number;
  readonly workers: number;
  /** How long each freeze lasts. */
  readonly freezeMs: number;
  /** How long each tool takes: long enough that faults find runs in flight. */
  readonly toolMs: number;
  readonly deadlineSeconds: number;
  /** How many times the schedule goes through every fault (default: again and again until the workers finish). */
  readonly rounds?: number;
  readonly log?: (line: string) => void;
  /** Told each store's report as soon as that store is done, so a later store's failure loses none. */
  readonly onReport?: (result: FaultSoakReport) => void;
}

/** One fault as it happened: when, how many runs were in flight, and what the workers saw until the next one. */
export interface FaultRow {
  readonly fault: string;
  /** Seconds since the soak started. */
  readonly at: number;
  readonly inFlight: number;
  readonly unavailable: number;
  readonly maxOpMs: number;
}

export interface FaultSoakReport {
  readonly report: SoakReport;
  readonly rows: readonly FaultRow[];
  /** The kill soak's violations, plus an operation pending past the store's timeout, or a fault that never found a run in flight. */
  readonly violations: readonly string[];
}

export const FAULT_DEFAULTS = { runs: 500, workers: 4, freezeMs: 10_000, toolMs: 300, deadlineSeconds: 900 } as const;

/** The store's operation timeout the soak holds every operation to (Redis's default; PostgreSQL is held to the same). */
const OPERATION_TIMEOUT_MS = 5_000;
/** What a busy machine adds to a timed-out operation before its rejection is seen. */
const TIMEOUT_MARGIN_MS = 1_000;
/** The pause after each fault, so the workers meet it and recover before the next. */
const SETTLE_MS = 1_000;

/** One fault of a schedule: applied, given the soak's prefix, when runs are in flight. */
export interface Fault {
  readonly name: string;
  readonly apply: (prefix: string) => Promise<void>;
}

/** Soaks Redis, then PostgreSQL, each its own server under its own faults. */
export async function faultSoak(options: FaultSoakOptions): Promise<FaultSoakReport[]> {
  const results: FaultSoakReport[] = [];
  for (const store of [redisFaults, postgresFaults]) {
    const result = await store(options);
    options.onReport?.(result);
    results.push(result);
  }
  return results;
}

async function redisFaults(options: FaultSoakOptions): Promise<FaultSoakReport> {
  const redis = await OwnRedis.start();
  const proxy = await CutProxy.start(redis.port);
  try {
    return await underFaults(`redis://127.0.0.1:${proxy.port}`, options, [
      cutFault(proxy),
      { name: "restart Redis (SIGTERM, AOF always)", apply: () => redis.stop().then(() => redis.start()) },
      freezeFault(redis, options.freezeMs),
    ]);
  } finally {
    await proxy.close();
    await redis.remove();
  }
}

async function postgresFaults(options: FaultSoakOptions): Promise<FaultSoakReport> {
  const postgres = await OwnPostgres.start();
  const proxy = await CutProxy.start(postgres.port);
  try {
    return await underFaults(`postgresql://postgres@127.0.0.1:${proxy.port}/postgres`, options, [
      cutFault(proxy),
      {
        name: "restart PostgreSQL (pg_ctl stop -m fast)",
        apply: () => postgres.stop("fast").then(() => postgres.start()),
      },
      {
        name: "restart PostgreSQL (pg_ctl stop -m immediate)",
        apply: () => postgres.stop("immediate").then(() => postgres.start()),
      },
      freezeFault(postgres, options.freezeMs),
    ]);
  } finally {
    await proxy.close();
    await postgres.remove();
  }
}

function cutFault(proxy: CutProxy): Fault {
  return { name: "cut every connection (proxy)", apply: async () => void proxy.cut() };
}

function freezeFault(server: OwnServer, ms: number): Fault {
  return {
    name: `freeze ${server.name} ${ms / 1000} s (SIGSTOP/SIGCONT)`,
    apply: async () => {
      signalAll(server, "SIGSTOP");
      try {
        await sleep(ms);
      } finally {
        signalAll(server, "SIGCONT");
      }
    },
  };
}

/** Runs the soak on `store` while the faults come one after another, again and again until most runs are done. */
export async function underFaults(
  store: string,
  options: FaultSoakOptions,
  faults: readonly Fault[],
): Promise<FaultSoakReport> {
  const rows: FaultRow[] = [];
  const started = Date.now();
  const disturb = async (progress: Progress, prefix: string) => {
    // Every fault at least once; more rounds while the workers still have runs to go.
    let round = 0;
    do {
      round += 1;
      for (const fault of faults) {
        while (progress.inFlight.size === 0 && progress.finished < options.workers && !progress.over) await sleep(20);
        if (progress.over) return;
        const at = (Date.now() - started) / 1000;
        const inFlight = progress.inFlight.size;
        progress.windowUnavailable = 0;
        progress.windowMaxOpMs = 0;
        await fault.apply(prefix);
        await sleep(SETTLE_MS);
        rows.push({
          fault: fault.name,
          at,
          inFlight,
          unavailable: progress.windowUnavailable,
          maxOpMs: progress.windowMaxOpMs,
        });
        options.log?.(
          `${fault.name} at ${at.toFixed(1)} s: ${inFlight} runs in flight, ${progress.windowUnavailable} StoreUnavailable`,
        );
      }
    } while (round < (options.rounds ?? Infinity) && progress.finished < options.workers && !progress.over);
  };
  const report = await soak({
    store,
    runs: options.runs,
    workers: options.workers,
    deadlineSeconds: options.deadlineSeconds,
    killEveryMs: [0, 0],
    restartEvery: SOAK_DEFAULTS.restartEvery,
    leaseMs: SOAK_DEFAULTS.leaseMs,
    stopDeadlineMs: SOAK_DEFAULTS.stopDeadlineMs,
    toolMs: options.toolMs,
    disturb,
    log: options.log,
  });
  const violations = [...report.violations];
  const limit = OPERATION_TIMEOUT_MS + TIMEOUT_MARGIN_MS;
  if (report.maxOpMs > limit)
    violations.push(
      `a store operation stayed pending ${Math.round(report.maxOpMs)} ms, past the ${OPERATION_TIMEOUT_MS} ms timeout`,
    );
  for (const fault of faults) {
    const times = rows.filter((row) => row.fault === fault.name);
    if (times.every((row) => row.inFlight === 0))
      violations.push(
        `${fault.name} ${times.length === 0 ? "never came" : "found no run in flight"}: give the soak more runs (--runs)`,
      );
  }
  return { report, rows, violations };
}

/** The table of one store's faults: fault, when, runs in flight, StoreUnavailable seen, longest operation. */
export function faultTable(rows: readonly FaultRow[]): string[] {
  const header = ["fault", "at s", "in flight", "StoreUnavailable", "max op ms"];
  const body = rows.map((r) => [
    r.fault,
    r.at.toFixed(1),
    String(r.inFlight),
    String(r.unavailable),
    String(Math.round(r.maxOpMs)),
  ]);
  return alignColumns([header, ...body]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
