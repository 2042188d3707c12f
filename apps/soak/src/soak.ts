import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PrismaCheckpointStore } from "@durable/store-prisma";
import { RedisCheckpointStore } from "@durable/store-redis";
import { ownDatabase } from "@durable/test-utils/postgres";
import { dropKeys } from "@durable/test-utils/redis";
import { dropClusterKeys } from "@durable/test-utils/redis-cluster";
import { rollingDeploy } from "./deploy.js";
import { readLedger } from "./ledger.js";
import { type Death, type Life, newProgress, type Progress, WorkerSlot } from "./slot.js";
import { clusterRootNodes, openSoakStore, soakStoreKind } from "./store.js";
import { type Findings, verify } from "./verify.js";
import { customerOf, type QueueFigures, type QueueSoak, queueFigures, queueViolations } from "./queue.js";
import { type Starter, startStarter } from "./starter.js";
import { indexOfRun } from "./tickets.js";
import { type VersionFigures, versionSummary, versionVerdict } from "./version-verdict.js";
import { type DeployState, startVersions, type VersionSoak, versionOfRun } from "./versions.js";

export type { Progress } from "./slot.js";

export interface SoakOptions {
  /** `redis://…`, `redis-cluster://…` (a prefix of its own) or `postgresql://…` (the soak makes a database of its own on that server and drops it). */
  readonly store: string;
  readonly runs: number;
  readonly workers: number;
  /** The soak fails if the workers have not finished by then. */
  readonly deadlineSeconds: number;
  /** The pause between two disturbances (a SIGKILL, or a rolling restart), in ms: a random time in this range. */
  readonly killEveryMs: readonly [number, number];
  /** Every how many disturbances one is a rolling restart (SIGTERM, drain, a new process) instead of a SIGKILL. */
  readonly restartEvery: number;
  /** How long a worker's lease on a run lasts from its last renewal: a killed worker's runs are claimable this long after. */
  readonly leaseMs: number;
  /** How long a worker given SIGTERM lets its runs go on before it gives them up. */
  readonly stopDeadlineMs: number;
  /** Instead of kills and restarts (`killEveryMs` is then unused): what disturbs the workers (server faults), given what they report as they go and the soak's prefix (or tables). */
  readonly disturb?: (progress: Progress, prefix: string) => Promise<void>;
  /** How long each tool takes, in ms (default a random 0–4 ms). */
  readonly toolMs?: number;
  /** How long each checkpoint save waits before it is sent, as if checkpoints were slow to write (default 0). */
  readonly saveDelayMs?: number;
  /**
   * The queue soak: a starter process starts every run on one queue with these
   * limits (each run's customer its concurrency key) and the workers serve the
   * queue; the verdict adds the limits as the tools' ledger saw them.
   */
  readonly queue?: QueueSoak;
  /**
   * The versions soak: a starter starts the runs, the first half on version 1 of the soak's flow, which every
   * worker serves at first; then a rolling deploy moves some slots to version 2, and every run after starts on
   * it; the verdict adds that each run went on only in processes of its version (src/version-verdict.ts).
   */
  readonly versions?: VersionSoak;
  readonly log?: (line: string) => void;
}

export interface SoakReport extends Findings {
  readonly store: string;
  readonly runs: number;
  readonly seconds: number;
  /** SIGKILLs. */
  readonly kills: number;
  /** Rolling restarts: SIGTERM, drain, a new process in the slot. */
  readonly restarts: number;
  /** Runs a worker took over from another (its lease ran out or was released). */
  readonly recovered: number;
  /** Store operations that failed with `StoreUnavailable` (each retried), and the longest one a worker timed (ms, 0 if none took over 50 ms). */
  readonly unavailable: number;
  readonly maxOpMs: number;
  /** The queue soak: the most runs inside a tool at once, and the most of one customer. */
  readonly queue?: QueueFigures;
  /** The versions soak: what the deploy did. */
  readonly versions?: VersionFigures;
}

export const SOAK_DEFAULTS = {
  runs: 500,
  workers: 4,
  deadlineSeconds: 240,
  killEveryMs: [500, 2_000],
  restartEvery: 4,
  leaseMs: 2_000,
  // Shorter than most runs' remaining time, so a restarted worker gives some up and another takes them at once.
  stopDeadlineMs: 500,
  // Tools and saves slow enough that kills land inside tools and between a result and its checkpoint alike.
  toolMs: 100,
  saveDelayMs: 50,
} as const;

/** Runs the soak on one store: workers killed and restarted at random while they take the runs, then every promise checked. */
export async function soak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), "durable-soak-"));
  const ledger = join(dir, "ledger");
  let keepLedger = false;
  const target = await Target.prepare(options.store);
  const started = Date.now();
  const progress = newProgress();
  const deaths: Death[] = [];
  const lives: Life[] = [];
  const startedFile = join(dir, "started");
  const [{ url, prefix }, { runs }] = [target, options];
  // A starter starts the runs in the queue soak and the versions soak; otherwise each worker starts its share.
  const deployState: DeployState = { halfway: false, over: false };
  const starter: Starter | undefined =
    options.versions !== undefined
      ? startVersions({ url, prefix, runs, startedFile, versions: options.versions }, progress, deployState)
      : options.queue !== undefined
        ? startStarter({ startedFile, url, prefix, runs, queue: options.queue })
        : undefined;
  const slots = Array.from(
    { length: options.workers },
    (_, slot) =>
      new WorkerSlot(
        {
          url: target.url,
          prefix: target.prefix,
          slot,
          workers: options.workers,
          runs: options.runs,
          ledger,
          leaseMs: options.leaseMs,
          stopDeadlineMs: options.stopDeadlineMs,
          toolMs: options.toolMs,
          saveDelayMs: options.saveDelayMs,
          ...(starter === undefined ? {} : { startedFile }),
          ...(options.queue === undefined ? {} : { queue: options.queue }),
          ...(options.versions === undefined ? {} : { version: 1 as const }),
        },
        process.env,
        progress,
        deaths,
        lives,
      ),
  );
  const disturbance = options.disturb?.(progress, target.prefix);
  const deploy =
    options.versions === undefined
      ? undefined
      : outcomeOf(rollingDeploy(slots, deployState, { url, prefix, started }, options.versions, progress, log));
  const restarting = new Set<Promise<void>>();
  let [kills, restarts] = [0, 0];
  try {
    const deadline = started + options.deadlineSeconds * 1000;
    const waitFor = (): void => {
      for (const w of slots) w.check();
      starter?.check();
      if (deploy?.failed !== undefined) throw deploy.failed;
      if (Date.now() > deadline)
        throw new Error(`the workers did not finish ${options.runs} runs in ${options.deadlineSeconds} s`);
    };
    if (disturbance !== undefined) await disturbed(disturbance, slots, waitFor);
    while (slots.some((w) => !w.finished)) {
      const [min, max] = options.killEveryMs;
      await sleep(min + Math.random() * (max - min));
      waitFor();
      // Only a worker that finished a run since it started may be ended: every life makes progress,
      // so the soak ends even on a machine so busy that start-up takes longer than the pause.
      const eligible = slots.filter((w) => !w.finished && !w.ending && w.ranSinceStart > 0);
      const victim = eligible[Math.floor(Math.random() * eligible.length)];
      if (victim === undefined) continue;
      const at = `${((Date.now() - started) / 1000).toFixed(1)} s`;
      if ((kills + restarts + 1) % options.restartEvery === 0) {
        // A rolling restart drains for a while: kills go on meanwhile.
        const restart = victim.restart().finally(() => restarting.delete(restart));
        restarting.add(restart);
        restarts += 1;
        log(`restarted worker ${slots.indexOf(victim)} (SIGTERM; ${restarts} restarts, ${at})`);
      } else {
        await victim.kill();
        kills += 1;
        log(`killed worker ${slots.indexOf(victim)} (SIGKILL; ${kills} kills, ${at})`);
      }
    }
    await Promise.all(restarting);
    await deploy?.settled;
    const seconds = (Date.now() - started) / 1000;
    const store = await openSoakStore(target.url, target.prefix);
    try {
      const findings = await verify({
        store,
        runs: options.runs,
        ledger: readLedger(ledger),
        deaths,
        leaseMs: options.leaseMs,
        inDoubtOnlyAfterDeaths: disturbance === undefined,
        ...(options.versions === undefined ? {} : { versionOf: (k: number) => versionOfRun(k, runs) }),
      });
      const queue = options.queue === undefined ? undefined : queueVerdict(options.queue, readLedger(ledger), deaths);
      if (queue !== undefined) (findings.violations as string[]).push(...queue.violations);
      const deployed =
        options.versions === undefined
          ? undefined
          : versionVerdict({
              ledger: readLedger(ledger),
              lives,
              runs,
              deployed: deploy?.value ?? 0,
              toDeploy: options.versions.deployed,
              otherVersion: progress.otherVersion,
            });
      if (deployed !== undefined) (findings.violations as string[]).push(...deployed.violations);
      // The ledger of a soak that found violations stays, for whoever looks into them.
      keepLedger = findings.violations.length > 0;
      if (keepLedger) (options.log ?? console.error)(`the ledger is kept at ${ledger}`);
      return {
        store: options.store,
        runs: options.runs,
        seconds,
        kills,
        restarts,
        recovered: progress.recovered,
        unavailable: progress.unavailable,
        maxOpMs: progress.maxOpMs,
        ...findings,
        ...(queue === undefined ? {} : { queue: queue.figures }),
        ...(deployed === undefined ? {} : { versions: deployed.figures }),
      };
    } finally {
      await store.close();
    }
  } finally {
    // A soak that failed leaves no worker behind, and no fault going on while it cleans up.
    for (const w of slots) w.stop();
    progress.over = true;
    await starter?.stop();
    await deploy?.settled;
    await disturbance?.catch(() => {});
    await Promise.allSettled(restarting);
    await target.drop();
    if (!keepLedger) rmSync(dir, { recursive: true, force: true });
  }
}

/** The queue's limits as the tools saw them (`queueFigures`), and what broke them. */
function queueVerdict(
  limits: QueueSoak,
  ledger: ReturnType<typeof readLedger>,
  deaths: readonly Death[],
): { figures: QueueFigures; violations: string[] } {
  const figures = queueFigures(ledger.executions, deaths, (runId) => customerOf(indexOfRun(runId), limits));
  return { figures, violations: queueViolations(figures, limits) };
}

/** The report in a few lines: what happened to the workers, what recovery did, and the violations. */
export function soakSummary(report: SoakReport): string[] {
  const queue =
    report.queue === undefined
      ? []
      : [
          `queue: at most ${report.queue.mostInside} runs inside a tool at once, at most ${report.queue.mostOfOneCustomer} of one customer`,
        ];
  return [
    ...queue,
    ...(report.versions === undefined ? [] : [versionSummary(report.versions)]),
    `${report.runs} runs done in ${report.seconds.toFixed(1)} s through ${report.kills} SIGKILLs (${report.killsInsideTools} inside a tool) ` +
      `and ${report.restarts} SIGTERM restarts (${report.gaveUp} gave runs up at their deadline)`,
    `${report.recovered} runs taken over by a worker; ${report.takeOvers} claims with takeOver; ${report.leaseHeld} claims refused for a live lease (LeaseHeld); ${report.lapsedLeases} leases of a live, starved worker ran out and the run was taken over`,
    `${report.inDoubtRuns} runs found in doubt, ${report.rerunCalls} non-idempotent calls reran after being reported, ${report.replayedCalls} calls replayed from the log; ` +
      `${report.violations.length} violations`,
  ];
}

/** A task the soak runs beside its kills, its outcome readable at any turn: `failed` once it threw. */
function outcomeOf<T>(task: Promise<T>): { value?: T; failed?: unknown; readonly settled: Promise<void> } {
  const outcome: { value?: T; failed?: unknown; settled: Promise<void> } = { settled: Promise.resolve() };
  outcome.settled = task.then(
    (value) => {
      outcome.value = value;
    },
    (error: unknown) => {
      outcome.failed = error ?? new Error("the task failed");
    },
  );
  return outcome;
}

/** Waits for the disturbance and for every worker to finish, failing on a worker that died or on the deadline. */
async function disturbed(disturbance: Promise<void>, slots: readonly WorkerSlot[], waitFor: () => void): Promise<void> {
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
  while (!settled || slots.some((w) => !w.finished)) {
    await sleep(100);
    waitFor();
    if (failure !== undefined) throw failure;
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
    const kind = soakStoreKind(url);
    if (kind !== "postgresql") {
      const prefix = `soak-${randomUUID().replaceAll("-", "").slice(0, 12)}`;
      const pattern = RedisCheckpointStore.keyPattern(prefix);
      const drop =
        kind === "redis" ? () => dropKeys(pattern, url) : () => dropClusterKeys(pattern, clusterRootNodes(url));
      return new Target(url, prefix, drop);
    }
    const own = ownDatabase("durable_soak", url);
    await own.create();
    const store = new PrismaCheckpointStore(own.url, { tablePrefix: "soak_" });
    await store.migrate();
    await store.close();
    return new Target(own.url, "soak_", own.drop);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
