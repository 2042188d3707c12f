/**
 * One soak worker process: worker.ts <config as JSON> (`WorkerConfig`).
 *
 * It serves the soak's one flow with `startWorker`: any run whose lease ran
 * out or was released, whoever started it, it recovers. It also starts its
 * share of the runs (every run k with k % workers = slot that does not exist
 * yet), so runs it drives and runs it takes over mix; or, when a starter
 * starts them (the queue soak, the versions soak), it starts none and takes
 * them all. In the versions soak it serves one version of the flow
 * (`version`) and leaves the other's runs. A claim that finds calls in doubt
 * is written to the ledger, then decided: recovered again with
 * `rerunInDoubt` (the card and the mail provider take the idempotency key).
 *
 * It prints "ready" once its worker takes runs, "started <run>" when it
 * starts a run, "claimed <run>" when its worker took a run a starter started,
 * "recovered <run>" when it took one over, "decided <run>" when it reran
 * one's calls in doubt, "done <run>" for each run it finished, "unavailable"
 * for each store operation that failed with `StoreUnavailable` (it then waits
 * and tries again: it never exits on it), "op <ms>" for a slow store
 * operation, "other <n>" when the runs of another version its worker left
 * (`WorkerStatus.otherVersion`) became n, and "finished" once its share
 * exists (or the starter's file does) and no run is left unfinished.
 *
 * SIGTERM: it stops starting and taking runs, lets the ones it drives go on
 * for `stopDeadlineMs`, then gives the rest up (the worker releases their
 * leases; a run it started itself keeps its lease until it runs out), writes
 * that to the ledger, and lets the signal end it.
 */
import {
  CheckpointConflict,
  CheckpointNotFound,
  type EventSink,
  Executor,
  LeaseHeld,
  QueueFull,
  RecoveryNeedsDecision,
  StoreUnavailable,
  startWorker,
} from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { existsSync } from "node:fs";
import { LedgerWriter } from "./ledger.js";
import { type QueueSoak, soakQueue } from "./queue.js";
import { KEY, openSoakStore } from "./store.js";
import { order, runIdOf, type SoakVersion, soakFlow, soakTools } from "./tickets.js";
import { watchedStore } from "./watched-store.js";

/** What the soak tells each worker process. */
export interface WorkerConfig {
  /** Its name in the soak's ledger, never reused in a soak. */
  readonly worker: string;
  readonly url: string;
  readonly prefix: string;
  readonly slot: number;
  readonly workers: number;
  readonly runs: number;
  readonly ledger: string;
  readonly leaseMs: number;
  readonly stopDeadlineMs: number;
  /** How long each tool takes (default a random 0–4 ms). */
  readonly toolMs?: number;
  /** How long each checkpoint save waits before it is sent (default 0). */
  readonly saveDelayMs?: number;
  /** A starter starts the runs (the queue soak, the versions soak): it starts none, and finishes only once this file exists. */
  readonly startedFile?: string;
  /** The queue soak: it serves the soak's queue, whose runs the starter starts on it. */
  readonly queue?: QueueSoak;
  /** The versions soak: the version of the soak's flow it serves (and seals, were it to start a run). */
  readonly version?: SoakVersion;
}

/** Runs a worker started itself at once (its lanes), and runs its worker drives at once. */
const LANES = 4;
const RETRY_MS = 250;
/** How often a worker whose share is done looks for runs left waiting for a decision. */
const SWEEP_MS = 2_000;

const config = JSON.parse(process.argv[2] ?? "{}") as WorkerConfig;
let stopping = false;

const ledger = new LedgerWriter(config.ledger, config.worker, config.version);
const flow = soakFlow(config.version);
const say = (line: string): void => void console.log(line);
/** When this process last sent a save of each run: a claim that finds calls in doubt is dated by it. */
const lastSave = new Map<string, number>();
const store = watchedStore(
  await openSoakStore(config.url, config.prefix),
  {
    slow: (ms) => say(`op ${Math.round(ms)}`),
    unavailable: () => say("unavailable"),
    leaseHeld: (runId) => ledger.leaseHeld(runId),
    saving: (runId, step, waiting) => {
      // The save after a claim that stopped for a decision: the report of the calls in doubt is dated by the claim.
      if (!waiting) lastSave.set(runId, Date.now());
      // A start is a claim, noted before it is sent: it may land with the run's first call record.
      if (step === 0) ledger.claimed(runId);
    },
    tookOver: (runId) => ledger.tookOver(runId),
    leaseWritten: (runId, write) => ledger.leaseWritten(runId, write),
  },
  config.saveDelayMs,
);
/** When the claim an event follows was sent: the last save of the run this process sent. */
const claimedAt = (runId: string): number => lastSave.get(runId) ?? Date.now();
/** Runs whose calls in doubt this process is deciding. */
const deciding = new Map<string, Promise<void>>();
const events: EventSink = (event) => {
  if (event.type === "checkpoint.saved" && event.step === 0) {
    say(`started ${event.runId}`);
  } else if (event.type === "run.recovered") {
    ledger.claimed(event.runId);
    for (const call of event.replayed) ledger.replayed(event.runId, call.callId);
    if (event.rerun.length > 0) ledger.inDoubt(event.runId, claimedAt(event.runId), event.rerun, true);
    // A run a starter started is first claimed at step 1: that is no takeover.
    const first = config.startedFile !== undefined && event.step === 1;
    say(`${deciding.has(event.runId) ? "decided" : first ? "claimed" : "recovered"} ${event.runId}`);
  } else if (event.type === "run.needs-decision") {
    ledger.inDoubt(event.runId, claimedAt(event.runId), event.calls, false);
  } else if (event.type === "run.done") {
    lastSave.delete(event.runId);
    say(`done ${event.runId}`);
  }
};
const executor = new Executor(soakTools(ledger, config.toolMs, config.queue !== undefined));
const runner = new FlowRunner(executor, {
  checkpoints: store,
  checkpointKey: KEY,
  events,
  lease: { ms: config.leaseMs },
});
const served = runner.served(flow);
const giveUp = new AbortController();
const worker = startWorker({
  serve: [served],
  ...(config.queue === undefined ? {} : { queues: [soakQueue(config.queue)] }),
  concurrency: LANES,
  pollMs: 250,
  maxPollMs: 1_000,
  stopDeadlineMs: config.stopDeadlineMs,
  rerunInDoubt: false,
  stopOnSignals: false,
  onStuck: (runId, error) => {
    if (error instanceof RecoveryNeedsDecision) decide(runId);
    else fail(error);
  },
});

/**
 * The soak's operator: finds the runs left waiting for a decision and decides
 * them, as someone reading the console would. The worker that left a run
 * waiting reports it once (`onStuck`), and no claimable listing gives it
 * again: when that worker died before it decided, only this finds the run.
 */
async function decideWaiting(): Promise<void> {
  const claimable = new Set<string>();
  for await (const runId of store.listUnfinished(flow.name, { claimable: true })) claimable.add(runId);
  if (config.queue !== undefined)
    for await (const { runId } of store.listQueued?.(soakQueue(config.queue).name) ?? []) claimable.add(runId);
  for await (const runId of store.listUnfinished(flow.name)) {
    if (stopping) return;
    // A claimable run is the workers' to take: one that stops for a decision is reported through onStuck. A run of
    // another version needs no decision of this process: its `needsDecision` is `VersionNotServed`, taken for false.
    if (deciding.has(runId) || claimable.has(runId)) continue;
    const lease = await store.leaseOf(runId);
    if (lease !== undefined && lease.expiresAt > lease.now) continue;
    if (await served.needsDecision(runId).catch(() => false)) decide(runId);
  }
}

/** Reruns a run's calls in doubt; another worker deciding or driving it first is fine. */
function decide(runId: string): void {
  if (stopping || deciding.has(runId)) return;
  const decision = (async () => {
    for (;;) {
      try {
        // The decision's drive holds the run under a lease owner of its own: the worker's drives cannot claim it.
        await runner.recover(flow, runId, { rerunInDoubt: true, signal: giveUp.signal });
        return;
      } catch (error) {
        if (giveUp.signal.aborted || isAnotherWorkers(error)) return;
        // The store was away, or the run's queue has no room for the decision's claim yet: try again shortly.
        if (!(error instanceof StoreUnavailable || error instanceof QueueFull)) throw error;
        await sleep(RETRY_MS);
      }
    }
  })();
  deciding.set(
    runId,
    decision.catch(fail).finally(() => deciding.delete(runId)),
  );
}

let lanesRunning = 0;

/** Starts this slot's runs that do not exist yet, one lane at a time each; stops starting once stopping. */
async function startMine(): Promise<void> {
  const queue = Array.from({ length: config.runs }, (_, k) => k)
    .filter((k) => k % config.workers === config.slot)
    .values(); // one iterator: each lane takes the next run from it
  const lane = async () => {
    for (const k of queue) {
      for (;;) {
        if (stopping) return;
        lanesRunning += 1;
        try {
          if (!(await exists(runIdOf(k)))) await runner.run(flow, order(k), { runId: runIdOf(k) });
          break;
        } catch (error) {
          // Cut short by another worker's claim: it goes on with the run.
          if (isAnotherWorkers(error)) break;
          if (!(error instanceof StoreUnavailable)) throw error;
        } finally {
          lanesRunning -= 1;
        }
        // The store was away: the run may exist now; if it does, a worker recovers it once its lease runs out.
        await sleep(RETRY_MS);
      }
    }
  };
  await Promise.all(Array.from({ length: LANES }, lane));
}

const exists = (runId: string): Promise<boolean> =>
  store.latest(runId).then(
    () => true,
    (error: unknown) => (error instanceof CheckpointNotFound ? false : Promise.reject(error)),
  );

/** True once no run of the flow is left unfinished and this process drives none. */
async function allDone(): Promise<boolean> {
  if (worker.status().running > 0 || deciding.size > 0) return false;
  if (config.startedFile !== undefined && !existsSync(config.startedFile)) return false;
  try {
    for await (const _ of store.listUnfinished(flow.name)) return false;
    return true;
  } catch (error) {
    if (error instanceof StoreUnavailable) return false;
    throw error;
  }
}

/** SIGTERM: drain, give up what is left at the deadline, then let the signal end the process. */
async function stop(): Promise<void> {
  stopping = true;
  // Set before the worker's own deadline, so the ledger dates the give-up no later than the releases.
  const deadline = setTimeout(() => {
    if (worker.status().running > 0 || deciding.size > 0 || lanesRunning > 0) ledger.gaveUp();
    giveUp.abort();
  }, config.stopDeadlineMs);
  await within(Promise.allSettled([worker.stop(), starting, ...deciding.values()]), config.stopDeadlineMs + 1_000);
  clearTimeout(deadline);
  process.kill(process.pid, "SIGTERM");
}

function isAnotherWorkers(error: unknown): boolean {
  return error instanceof LeaseHeld || error instanceof CheckpointConflict || error instanceof CheckpointNotFound;
}

function fail(error: unknown): never {
  console.error(error);
  process.exit(1);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

say("ready");
const starting = config.startedFile === undefined ? startMine().catch(fail) : Promise.resolve();
// Until here a SIGTERM ends the process at once: it holds no run yet.
process.once("SIGTERM", () => void stop());
await starting;
let swept = Date.now();
let otherVersion = 0;
while (!stopping && !(await allDone())) {
  if (worker.status().otherVersion !== otherVersion) {
    otherVersion = worker.status().otherVersion;
    say(`other ${otherVersion}`);
  }
  if (Date.now() - swept >= SWEEP_MS) {
    await decideWaiting().catch((error: unknown) => (error instanceof StoreUnavailable ? undefined : fail(error)));
    swept = Date.now();
  }
  await sleep(200);
}
if (!stopping) {
  await worker.stop();
  say("finished");
  await store.close();
  process.exit(0);
}
