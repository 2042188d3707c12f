/**
 * How runs per second grow with worker processes: 1, 2, 4, 8 processes, each
 * running the tickets flow 16 runs at once, on a Redis of the bench's own and
 * on a Redis Cluster of its own (3 masters, a replica each), AOF
 * `appendfsync always` on every node alike, and on the cluster again with
 * `replicas: 1` (each write waits for its master's replica: what WAIT costs).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { alignColumns } from "@durable-apps/shared/table";
import { OwnCluster } from "@durable/test-utils/redis-cluster";
import { RedisNode } from "@durable/test-utils/redis-node";
import { createCluster } from "redis";
import { RedisCheckpointStore } from "@durable/store-redis";
import { latencyOf, round } from "../stats.js";
import type { ScaleWorkerConfig } from "./worker.js";

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** Runs at once in each worker process. */
const CONCURRENCY = 16;

interface ScalePoint {
  readonly workers: number;
  readonly runsPerSecond: number;
  /** Runs that failed (the store did not answer in time): not counted in runs/s. */
  readonly failed: number;
}

export interface ScaleCurve {
  readonly name: string;
  readonly detail: string;
  readonly points: readonly ScalePoint[];
}

/** What `replicas: 1` adds to one write on the cluster, one write at a time: medians in ms. */
interface WaitCost {
  readonly writes: number;
  readonly p50Ms: number;
  readonly withReplicasP50Ms: number;
}

export interface ScaleFigures {
  readonly curves: readonly ScaleCurve[];
  readonly waitCost: WaitCost;
}

interface ScaleTarget {
  readonly name: string;
  readonly detail: string;
  readonly redis: ScaleWorkerConfig["redis"];
  readonly replicas: number;
}

/** Starts the servers, measures each curve, and stops the servers, whatever happens. */
export async function measureScale(
  workerCounts: readonly number[],
  budgetMs: number,
  log: (line: string) => void = () => {},
  waitWrites = 1_000,
): Promise<ScaleFigures> {
  const dir = mkdtempSync(join(tmpdir(), "durable-bench-scale-"));
  let node: RedisNode | undefined;
  let cluster: OwnCluster | undefined;
  try {
    node = await RedisNode.start(dir);
    cluster = await OwnCluster.start();
    const targets: ScaleTarget[] = [
      { name: "redis, one node", detail: "one redis-server", redis: { url: node.url }, replicas: 0 },
      {
        name: "redis cluster",
        detail: "3 masters, a replica each",
        redis: { rootNodes: cluster.rootNodes },
        replicas: 0,
      },
      {
        name: "redis cluster, replicas: 1",
        detail: "the same, each write waits (WAIT 1) for its master's replica",
        redis: { rootNodes: cluster.rootNodes },
        replicas: 1,
      },
    ];
    const curves: ScaleCurve[] = [];
    for (const target of targets) {
      const points: ScalePoint[] = [];
      for (const workers of workerCounts) {
        points.push(await measurePoint(target, workers, budgetMs));
        const point = points.at(-1);
        log(`${target.name}: ${workers} workers, ${point?.runsPerSecond} runs/s, ${point?.failed} failed`);
      }
      curves.push({ name: target.name, detail: target.detail, points });
    }
    const waitCost = await measureWaitCost(cluster.rootNodes, waitWrites);
    log(`one write at a time on the cluster: ${waitCost.p50Ms} ms, with replicas: 1 ${waitCost.withReplicasP50Ms} ms`);
    return { curves, waitCost };
  } finally {
    await cluster?.stop();
    await node?.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs per second of `workers` processes together, each on a store of its own on a fresh prefix. */
async function measurePoint(target: ScaleTarget, workers: number, budgetMs: number): Promise<ScalePoint> {
  const config: ScaleWorkerConfig = {
    redis: target.redis,
    prefix: `scale-${randomUUID()}`,
    replicas: target.replicas,
    concurrency: CONCURRENCY,
  };
  const children = Array.from({ length: workers }, () => new WorkerProcess(config));
  try {
    await Promise.all(children.map((child) => child.line("ready")));
    for (const child of children) child.send(`go ${budgetMs}`);
    const ran = await Promise.all(children.map((child) => child.line("ran ")));
    const field = (line: string, i: number) => Number(line.split(" ")[i]);
    const runs = ran.reduce((sum, line) => sum + field(line, 1), 0);
    const ms = Math.max(...ran.map((line) => field(line, 2)));
    const failed = ran.reduce((sum, line) => sum + field(line, 3), 0);
    return { workers, runsPerSecond: round(runs / (ms / 1000), 0), failed };
  } finally {
    for (const child of children) child.kill();
  }
}

/**
 * The median of a call record's write on the cluster, without and with
 * `replicas: 1`, one write at a time, in blocks taken in turns so a machine
 * busier at one moment weighs on both alike.
 */
async function measureWaitCost(rootNodes: ReadonlyArray<{ url: string }>, writes: number): Promise<WaitCost> {
  const prefix = `wait-${randomUUID()}`;
  const sides = [0, 1].map((replicas) => ({
    store: new RedisCheckpointStore(() => createCluster({ rootNodes: [...rootNodes] }), { prefix, replicas }),
    run: `run-${replicas}`,
    samples: [] as number[],
  }));
  const row = { status: "running", segment: 0, name: "wait", kind: "flow", sealed: "x".repeat(200) } as const;
  const BLOCK = 50;
  try {
    for (const side of sides) await side.store.save(side.run, 0, row);
    for (let block = 0; block < writes / BLOCK; block++) {
      for (const side of block % 2 === 0 ? sides : [...sides].reverse()) {
        for (let n = 0; n < BLOCK; n++) {
          const started = performance.now();
          await side.store.recordCall(side.run, 0, side.samples.length, "y".repeat(200));
          side.samples.push(performance.now() - started);
        }
      }
    }
    const [without, withReplicas] = sides.map((side) => round(latencyOf(side.samples).p50, 3));
    return { writes, p50Ms: without ?? Number.NaN, withReplicasP50Ms: withReplicas ?? Number.NaN };
  } finally {
    for (const side of sides) await side.store.close();
  }
}

/** A worker process whose output lines can be awaited; a worker that exits early fails the wait with its stderr. */
class WorkerProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: string[] = [];
  readonly #waiting = new Set<() => void>();
  #stderr = "";

  constructor(config: ScaleWorkerConfig) {
    // stdin, stdout and stderr are pipes (the default).
    this.#child = spawn(process.execPath, ["--import", "tsx", WORKER, JSON.stringify(config)]);
    this.#child.stderr.on("data", (chunk: Buffer) => {
      this.#stderr += chunk.toString();
    });
    const wake = () => {
      for (const waiter of this.#waiting) waiter();
    };
    createInterface({ input: this.#child.stdout }).on("line", (line) => {
      this.#lines.push(line);
      wake();
    });
    this.#child.on("exit", wake);
  }

  /** The first line that starts with `start`, once printed. */
  line(start: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.#lines.find((line) => line.startsWith(start));
        if (found !== undefined) {
          this.#waiting.delete(check);
          resolve(found);
        } else if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
          this.#waiting.delete(check);
          reject(new Error(`a scale worker exited before "${start}": ${this.#stderr.trim()}`));
        }
      };
      this.#waiting.add(check);
      check();
    });
  }

  send(line: string): void {
    this.#child.stdin.write(`${line}\n`);
  }

  kill(): void {
    if (this.#child.exitCode === null) this.#child.kill("SIGKILL");
  }
}

/** The curves as a table: one row per target, runs/s per number of worker processes (and failed runs, if any). */
export function scaleTable(curves: readonly ScaleCurve[]): string[] {
  const counts = curves[0]?.points.map((point) => point.workers) ?? [];
  const cell = (point: ScalePoint) =>
    point.failed > 0 ? `${point.runsPerSecond} (${point.failed} failed)` : String(point.runsPerSecond);
  return alignColumns([
    ["runs/s with N worker processes", ...counts.map((n) => `N = ${n}`)],
    ...curves.map((curve) => [curve.name, ...curve.points.map(cell)]),
  ]);
}
