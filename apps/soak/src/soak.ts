import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { CheckpointStore } from "@durable/core";
import { DurableRun, readCallLog, Sealer } from "@durable/core/runner";
import { PrismaCheckpointStore } from "@durable/store-prisma";
import { RedisCheckpointStore } from "@durable/store-redis";
import { ownDatabase } from "@durable/test-utils/postgres";
import { dropKeys } from "@durable/test-utils/redis";
import { KEY, openSoakStore } from "./store.js";
import { NON_IDEMPOTENT, runIdOf } from "./tickets.js";

export interface SoakOptions {
  /** `redis://…` or `postgresql://…` (the soak makes a database of its own on that server and drops it). */
  readonly store: string;
  readonly runs: number;
  readonly workers: number;
  /** The soak fails if the workers have not finished by then. */
  readonly deadlineSeconds: number;
  /** The killer's pause between two kills, in milliseconds: a random time in this range. */
  readonly killEveryMs: readonly [number, number];
  /** Instead of the killer (`killEveryMs` is then unused): what disturbs the workers (server faults), given what they report as they go. */
  readonly disturb?: (progress: Progress) => Promise<void>;
  /** How long each tool takes, in ms (default a random 0–4 ms). */
  readonly toolMs?: number;
  readonly log?: (line: string) => void;
}

/** What the workers reported so far, summed over all of them. */
export interface Progress {
  /** Runs a worker started or recovered and has not finished yet. */
  readonly inFlight: Set<string>;
  /** Runs a worker took to the end, from their start or from a recovery. */
  ran: number;
  /** Times a worker met `StoreUnavailable` and started over from recovery. */
  unavailable: number;
  /** The longest store operation reported, in ms (operations over 50 ms are reported). */
  maxOpMs: number;
  /** The same since whoever watches last set it to 0 (the fault soak, at each fault). */
  windowMaxOpMs: number;
  /** `unavailable` since whoever watches last set it to 0. */
  windowUnavailable: number;
  /** Workers that printed "finished". */
  finished: number;
  /** Set once the soak stops waiting for the workers: a disturbance then ends. */
  over: boolean;
}

export interface SoakReport {
  readonly store: string;
  readonly runs: number;
  readonly seconds: number;
  readonly kills: number;
  /** Runs recovery reported calls in doubt for (then rerun: the providers take the idempotency key). */
  readonly inDoubtRuns: number;
  /** Extra executions of non-idempotent calls: each one reported in doubt first. */
  readonly rerunCalls: number;
  /** Calls recovery replayed from the log (a `done` record) whose tool the ledger shows did not run again. */
  readonly replayedCalls: number;
  /** Times a worker met `StoreUnavailable`, and the longest store operation a worker timed (ms, 0 if none took over 50 ms). */
  readonly unavailable: number;
  readonly maxOpMs: number;
  /** Everything that broke a promise: a run not done, a call run twice unreported, a customer charged twice. */
  readonly violations: readonly string[];
}

export const SOAK_DEFAULTS = { runs: 500, workers: 4, deadlineSeconds: 240, killEveryMs: [500, 2_000] } as const;

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** Runs the soak on one store: workers killed at random while they take the runs, then every promise checked. */
export async function soak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), "durable-soak-"));
  const [ledger, inDoubtLog, replayLog] = [join(dir, "ledger"), join(dir, "in-doubt"), join(dir, "replayed")];
  const target = await Target.prepare(options.store);
  const started = Date.now();
  let kills = 0;
  const args = (slot: number) => [
    target.url,
    target.prefix,
    String(slot),
    String(options.workers),
    String(options.runs),
    ledger,
    inDoubtLog,
    replayLog,
  ];
  const progress: Progress = {
    inFlight: new Set<string>(),
    ran: 0,
    unavailable: 0,
    maxOpMs: 0,
    windowMaxOpMs: 0,
    windowUnavailable: 0,
    finished: 0,
    over: false,
  };
  const env = { ...process.env, ...(options.toolMs === undefined ? {} : { SOAK_TOOL_MS: String(options.toolMs) }) };
  const workers = Array.from({ length: options.workers }, (_, slot) => new Worker(() => args(slot), env, progress));
  const disturbance = options.disturb?.(progress);
  try {
    const deadline = started + options.deadlineSeconds * 1000;
    if (disturbance !== undefined) await disturbed(disturbance, workers, deadline, options);
    while (workers.some((w) => !w.finished)) {
      const [min, max] = options.killEveryMs;
      await sleep(min + Math.random() * (max - min));
      for (const w of workers) w.check();
      if (Date.now() > deadline)
        throw new Error(`the workers did not finish ${options.runs} runs in ${options.deadlineSeconds} s`);
      if (workers.every((w) => w.finished)) break;
      // Only a worker that finished a run since it started may die: every life makes progress,
      // so the soak ends even on a machine so busy that start-up takes longer than the pause.
      const eligible = workers.filter((w) => !w.finished && w.ranSinceStart > 0);
      const victim = eligible[Math.floor(Math.random() * eligible.length)];
      if (victim === undefined) continue;
      await victim.killAndRestart();
      kills += 1;
      log(`killed worker ${workers.indexOf(victim)} (${kills} kills, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
    const seconds = (Date.now() - started) / 1000;
    const store = await openSoakStore(target.url, target.prefix);
    try {
      const found = await verify(store, options.runs, { ledger, inDoubtLog, replayLog });
      return {
        store: options.store,
        runs: options.runs,
        seconds,
        kills,
        unavailable: progress.unavailable,
        maxOpMs: progress.maxOpMs,
        ...found,
      };
    } finally {
      await store.close();
    }
  } finally {
    // A soak that failed leaves no worker behind, and no fault going on while it cleans up.
    for (const w of workers) w.stop();
    progress.over = true;
    await disturbance?.catch(() => {});
    await target.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Waits for the disturbance and for every worker to finish, failing on a worker that died or on the deadline. */
async function disturbed(
  disturbance: Promise<void>,
  workers: readonly Worker[],
  deadline: number,
  options: SoakOptions,
): Promise<void> {
  let settled = false;
  let failure: unknown;
  disturbance.then(
    () => {
      settled = true;
    },
    (error: unknown) => {
      settled = true;
      failure = error ?? new Error("the disturbance failed");
    },
  );
  while (!settled || workers.some((w) => !w.finished)) {
    await sleep(100);
    for (const w of workers) w.check();
    if (failure !== undefined) throw failure;
    if (Date.now() > deadline)
      throw new Error(`the workers did not finish ${options.runs} runs in ${options.deadlineSeconds} s`);
  }
}

/** The files the workers write: the tools' executions, the runs reported in doubt, the calls recovery replayed. */
interface SoakLogs {
  readonly ledger: string;
  readonly inDoubtLog: string;
  readonly replayLog: string;
}

/**
 * Checks every run is done, every call finished once, and every non-idempotent
 * call ran once unless reported in doubt; counts the replayed calls the ledger
 * confirms (a `done` record, one execution).
 */
async function verify(store: CheckpointStore, runs: number, { ledger, inDoubtLog, replayLog }: SoakLogs) {
  const sealer = Sealer.withKeys(KEY);
  const violations: string[] = [];
  // How many times recovery reported each run's tool in doubt: each report allows one more execution.
  const reported = new Map<string, Map<string, number>>();
  for (const line of lines(inDoubtLog)) {
    const [runId, tools] = line.split(" ") as [string, string];
    const counts = reported.get(runId) ?? new Map<string, number>();
    for (const tool of tools.split(",")) counts.set(tool, (counts.get(tool) ?? 0) + 1);
    reported.set(runId, counts);
  }
  const executions = new Map<string, { tool: string; keys: Set<string>; count: number }>();
  for (const line of lines(ledger)) {
    const [runId, callId, tool, key] = line.split(" ") as [string, string, string, string];
    const entry = executions.get(`${runId} ${callId}`) ?? { tool, keys: new Set<string>(), count: 0 };
    entry.keys.add(key);
    entry.count += 1;
    executions.set(`${runId} ${callId}`, entry);
  }
  const replayed = new Set(lines(replayLog));
  let rerunCalls = 0;
  let replayedCalls = 0;
  for (let k = 0; k < runs; k++) {
    const runId = runIdOf(k);
    const latest = await DurableRun.latest(store, sealer, runId).catch((error: unknown) => error as Error);
    if (latest instanceof Error || latest.status !== "done") {
      violations.push(`${runId} is ${latest instanceof Error ? `lost (${latest.message})` : latest.status}`);
      continue;
    }
    const records = await readCallLog(store, sealer, runId, latest.calls);
    const done = records.filter((r) => r.kind === "done");
    if (done.length !== 3 || new Set(done.map((r) => r.callId)).size !== 3)
      violations.push(`${runId} has ${done.length} done records`);
    for (const record of done) {
      const ran = executions.get(`${runId} ${record.callId}`);
      if (ran?.count === 1 && replayed.has(`${runId} ${record.callId}`)) replayedCalls += 1;
      if (ran === undefined) violations.push(`${runId} ${record.tool} is done but never ran`);
      else if (ran.keys.size !== 1)
        violations.push(`${runId} ${record.tool} ran with ${ran.keys.size} idempotency keys`);
      else if (NON_IDEMPOTENT.has(record.tool) && ran.count > 1) {
        if (ran.count - 1 <= (reported.get(runId)?.get(record.tool) ?? 0)) rerunCalls += ran.count - 1;
        else
          violations.push(
            `${runId} ${record.tool} ran ${ran.count} times but was reported in doubt ${reported.get(runId)?.get(record.tool) ?? 0} times`,
          );
      }
    }
  }
  return { inDoubtRuns: reported.size, rerunCalls, replayedCalls, violations };
}

/** One worker slot: a process, restarted after each kill, until it prints "finished" and exits. */
class Worker {
  readonly #args: () => string[];
  readonly #env: NodeJS.ProcessEnv;
  readonly #progress: Progress;
  #process: ChildProcess;
  #stderr = "";
  finished = false;
  ranSinceStart = 0;

  constructor(args: () => string[], env: NodeJS.ProcessEnv, progress: Progress) {
    this.#args = args;
    this.#env = env;
    this.#progress = progress;
    this.#process = this.#start();
  }

  #start(): ChildProcess {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER, ...this.#args()], {
      stdio: ["ignore", "pipe", "pipe"],
      env: this.#env,
    });
    this.#stderr = "";
    this.ranSinceStart = 0;
    child.stderr.on("data", (chunk: Buffer) => (this.#stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      const [what, runId = ""] = line.split(" ");
      if (what === "started") this.#progress.inFlight.add(runId);
      // A run cut short by the store is finished by the recovery that follows.
      if (what === "recovered" || what === "ran") {
        this.#progress.inFlight.delete(runId);
        this.#progress.ran += 1;
      }
      if (line === "unavailable") {
        this.#progress.unavailable += 1;
        this.#progress.windowUnavailable += 1;
      }
      if (line.startsWith("op ")) {
        const ms = Number(line.slice(3));
        this.#progress.maxOpMs = Math.max(this.#progress.maxOpMs, ms);
        this.#progress.windowMaxOpMs = Math.max(this.#progress.windowMaxOpMs, ms);
      }
      if (what === "ran") this.ranSinceStart += 1;
      if (line === "finished") {
        this.finished = true;
        this.#progress.finished += 1;
      }
    });
    return child;
  }

  /** Throws when the worker died on its own: that is a failure, not a kill. */
  check(): void {
    const { exitCode } = this.#process;
    if (exitCode !== null && exitCode !== 0) throw new Error(`a worker failed (exit ${exitCode}): ${this.#stderr}`);
  }

  stop(): void {
    this.finished = true;
    this.#process.kill("SIGKILL");
  }

  async killAndRestart(): Promise<void> {
    const exited = new Promise((resolve) => this.#process.once("exit", resolve));
    this.#process.kill("SIGKILL");
    if (this.#process.exitCode === null && this.#process.signalCode === null) await exited;
    if (!this.finished) this.#process = this.#start();
  }
}

/** Where the soak keeps its runs: a fresh key prefix on Redis, a fresh database on PostgreSQL. */
class Target {
  private constructor(
    readonly url: string,
    readonly prefix: string,
    readonly drop: () => Promise<void>,
  ) {}

  static async prepare(url: string): Promise<Target> {
    if (url.startsWith("redis")) {
      const prefix = `soak-${randomUUID().replaceAll("-", "").slice(0, 12)}`;
      return new Target(url, prefix, () => dropKeys(RedisCheckpointStore.keyPattern(prefix), url));
    }
    const own = ownDatabase("durable_soak", url);
    await own.create();
    const store = new PrismaCheckpointStore(own.url, { tablePrefix: "soak_" });
    await store.migrate();
    await store.close();
    return new Target(own.url, "soak_", own.drop);
  }
}

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
