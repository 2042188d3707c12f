/**
 * Queued runs on a fleet: for each store (and DBOS's queue on PostgreSQL,
 * the same flow as three steps), 1, 2 and 4 worker processes serve one
 * queue. Two figures per point: runs per second while the fleet works off a
 * backlog (`backlog` runs started before the workers), and the latency from
 * a start's return to a worker's claim while the fleet idles (`paced` runs,
 * one every `PACE_MS`), as p50 and p99. Every side's workers look at the
 * queue as often (`POLL_MS`) and drive as many runs at once (`CONCURRENCY`).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ORDER, runner, tickets } from "../workload.js";
import { latencyOf, round } from "../stats.js";
import { textTable } from "../table.js";
import {
  openQueuedStore,
  QUEUE,
  QUEUED_TARGETS,
  type QueuedPlace,
  type QueuedTarget,
  type QueuedWorkerConfig,
} from "./target.js";

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));
const CONCURRENCY = 16;
const POLL_MS = 100;
const PACE_MS = 25;
const STARTING_LANES = 8;

interface QueuedPoint {
  readonly workers: number;
  readonly runsPerSecond: number;
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
}

export interface QueuedCurve {
  readonly name: string;
  readonly detail: string;
  readonly points: readonly QueuedPoint[];
}

/** Measures every side at each number of worker processes. */
export async function measureQueued(
  workerCounts: readonly number[],
  backlog: number,
  paced: number,
  log: (line: string) => void = () => {},
  targets: readonly QueuedTarget[] = QUEUED_TARGETS,
): Promise<QueuedCurve[]> {
  const curves: QueuedCurve[] = [];
  for (const target of targets) {
    const points: QueuedPoint[] = [];
    for (const workers of workerCounts) {
      const point = await measurePoint(target, workers, backlog, paced);
      log(
        `${target.name}: ${workers} workers, ${point.runsPerSecond} runs/s, claimed in ${point.claimP50Ms} ms (p99 ${point.claimP99Ms})`,
      );
      points.push(point);
    }
    curves.push({ name: target.name, detail: target.detail, points });
  }
  return curves;
}

async function measurePoint(
  target: QueuedTarget,
  workers: number,
  backlog: number,
  paced: number,
): Promise<QueuedPoint> {
  const { where, drop } = await target.prepare();
  const config = { ...where, concurrency: CONCURRENCY, pollMs: POLL_MS } as QueuedWorkerConfig;
  // DBOS makes its system database at its first launch, and its client needs it: one worker launches, then goes.
  if (where.kind === "dbos") {
    const first = new Fleet();
    await first.spawn(1, config).finally(() => first.kill());
  }
  const starter = await starterFor(where);
  const fleet = new Fleet();
  try {
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    const backlogIds = ids("backlog", backlog);
    await inLanes(backlogIds, (id) => starter.start(id));
    await fleet.spawn(workers, config);
    await fleet.allDone(backlogIds);
    const first = Math.min(...backlogIds.map((id) => fleet.claimed.get(id) ?? Number.POSITIVE_INFINITY));
    const last = Math.max(...backlogIds.map((id) => fleet.done.get(id) ?? 0));
    const startedAt = new Map<string, number>();
    for (const id of ids("paced", paced)) {
      await starter.start(id);
      startedAt.set(id, Date.now());
      await new Promise((resolve) => setTimeout(resolve, PACE_MS));
    }
    await fleet.allDone([...startedAt.keys()]);
    const waits = [...startedAt].map(([id, at]) => Math.max(0, (fleet.claimed.get(id) ?? at) - at));
    const latency = latencyOf(waits);
    return {
      workers,
      runsPerSecond: round(backlog / ((last - first) / 1000), 0),
      claimP50Ms: round(latency.p50, 0),
      claimP99Ms: round(latency.p99, 0),
    };
  } finally {
    fleet.kill();
    await starter.close();
    await drop();
  }
}

/** What starts the runs: the store's runner, or DBOS's client. */
async function starterFor(
  where: QueuedPlace,
): Promise<{ start(runId: string): Promise<void>; close(): Promise<void> }> {
  if (where.kind === "dbos") {
    const { DBOSClient } = await import("@dbos-inc/dbos-sdk");
    const client = await DBOSClient.create({ systemDatabaseUrl: where.url });
    return {
      start: async (runId) =>
        void (await client.enqueue(
          { queueName: QUEUE.name, workflowName: "tickets", workflowID: runId },
          ORDER,
          runId,
        )),
      close: () => client.destroy(),
    };
  }
  const store = await openQueuedStore(where);
  if ("migrate" in store && typeof store.migrate === "function") await store.migrate();
  const fleet = runner(store);
  return {
    start: async (runId) => void (await fleet.start(tickets, ORDER, { runId, queue: QUEUE })),
    close: () => store.close(),
  };
}

async function inLanes(ids: readonly string[], start: (id: string) => Promise<void>): Promise<void> {
  const next = ids.values();
  await Promise.all(
    Array.from({ length: STARTING_LANES }, async () => {
      for (const id of next) await start(id);
    }),
  );
}

/** The worker processes of one point, and what they said: when each run was claimed and done. */
class Fleet {
  readonly claimed = new Map<string, number>();
  readonly done = new Map<string, number>();
  readonly #children: ChildProcessWithoutNullStreams[] = [];
  readonly #waiting = new Set<() => void>();
  #stderr = "";
  #exited = false;

  async spawn(workers: number, config: QueuedWorkerConfig): Promise<void> {
    const ready = Array.from({ length: workers }, () => {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER, JSON.stringify(config)]);
      this.#children.push(child);
      child.stderr.on("data", (chunk: Buffer) => (this.#stderr += chunk.toString()));
      child.on("exit", () => {
        this.#exited = true;
        this.#wake();
      });
      return new Promise<void>((resolve) =>
        createInterface({ input: child.stdout }).on("line", (line) => {
          const [what, runId = "", at = ""] = line.split(" ");
          if (what === "ready") resolve();
          if (what === "claimed" && !this.claimed.has(runId)) this.claimed.set(runId, Number(at));
          if (what === "done") this.done.set(runId, Number(at));
          this.#wake();
        }),
      );
    });
    await this.#until(() => false, Promise.all(ready));
  }

  allDone(ids: readonly string[]): Promise<void> {
    return this.#until(() => ids.every((id) => this.done.has(id)));
  }

  kill(): void {
    for (const child of this.#children) if (child.exitCode === null) child.kill("SIGKILL");
  }

  #wake(): void {
    for (const waiter of this.#waiting) waiter();
  }

  /** Resolves once `met()` (or `also` resolves); rejects when a worker exits or after 120 s. */
  #until(met: () => boolean, also?: Promise<unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`the queued-runs workers did not finish in 120 s: ${this.#stderr.trim()}`)),
        120_000,
      );
      const finish = (error?: Error) => {
        clearTimeout(timer);
        this.#waiting.delete(check);
        if (error === undefined) resolve();
        else reject(error);
      };
      const check = () => {
        if (this.#exited) finish(new Error(`a queued-runs worker exited: ${this.#stderr.trim()}`));
        else if (met()) finish();
      };
      void also?.then(() => finish());
      this.#waiting.add(check);
      check();
    });
  }
}

/** The curves as a table: per side, runs/s and claim latency at each number of worker processes. */
export function queuedTable(curves: readonly QueuedCurve[]): string[] {
  const counts = curves[0]?.points.map((point) => point.workers) ?? [];
  const at = (curve: QueuedCurve, i: number) => curve.points[i];
  return textTable(
    curves,
    (curve) => curve.name,
    counts.flatMap((n, i) => [
      [`runs/s (${n})`, (curve: QueuedCurve) => String(at(curve, i)?.runsPerSecond ?? "-")] as const,
      [
        `claim p50/p99 ms (${n})`,
        (curve: QueuedCurve) => `${at(curve, i)?.claimP50Ms ?? "-"} / ${at(curve, i)?.claimP99Ms ?? "-"}`,
      ] as const,
    ]),
  );
}
