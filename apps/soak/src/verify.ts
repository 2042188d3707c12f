/**
 * The soak's checks, from the ledger the workers wrote and the deaths the
 * soak caused, not from what the store says of itself; the store is read
 * only to see that each run is done.
 */
import type { CheckpointStore } from "@durable/core";
import { DurableRun, readCallLog, Sealer } from "@durable/core/runner";
import { SAVE_RENEWS_AFTER } from "@durable/core/store";
import { type Execution, type LedgerEntries, push, type Touch } from "./ledger.js";
import type { Death } from "./slot.js";
import { KEY } from "./store.js";
import { NON_IDEMPOTENT, runIdOf, type SoakVersion, toolsOf } from "./tickets.js";

/** What the checks found. */
export interface Findings {
  /** Runs a claim found calls in doubt for (each then rerun: the providers take the idempotency key). */
  readonly inDoubtRuns: number;
  /** Extra executions of non-idempotent calls: each one announced by a recovery as a call in doubt it runs again. */
  readonly rerunCalls: number;
  /** Calls recovery replayed from the log (a `done` record) whose tool the ledger shows ran once. */
  readonly replayedCalls: number;
  /** SIGKILLs that ended a process while one of its tools ran. */
  readonly killsInsideTools: number;
  /** Stopping workers (SIGTERM) that gave up runs at their deadline. */
  readonly gaveUp: number;
  /** Claims the store refused because another worker's lease was live: the protocol working, not a fault. */
  readonly leaseHeld: number;
  /** Claims made with `takeOver`: the workers never make one, so any is a violation. */
  readonly takeOvers: number;
  /**
   * Runs claimed from a live worker whose lease had run out by the store's clock: starved past its lease (a
   * busy machine), it was presumed dead, which is what a lease is for. Allowed, counted, and it must still be
   * fenced: its calls run no more often than recoveries announced.
   */
  readonly lapsedLeases: number;
  readonly violations: readonly string[];
}

export interface VerifyInput {
  readonly store: CheckpointStore;
  readonly runs: number;
  readonly ledger: LedgerEntries;
  readonly deaths: readonly Death[];
  /** How long a lease lasts from its last renewal, as the workers were told. */
  readonly leaseMs: number;
  /**
   * Whether every call in doubt must follow a death. Under server faults a
   * worker that lost its store between a tool and its record leaves the call
   * in doubt without dying, so the fault soak does not ask it.
   */
  readonly inDoubtOnlyAfterDeaths: boolean;
  /** The version of the soak's flow run k started on (the versions soak; default none): it seals it, and makes its calls. */
  readonly versionOf?: (k: number) => SoakVersion | undefined;
}

/** A process the soak ended, with when its runs became another worker's to claim. */
interface Ended extends Death {
  /** SIGKILL: the signal. SIGTERM: when it gave up its runs, or its exit if it drained them all. */
  readonly releasedAt: number;
}

/**
 * (a) every run is done, none lost, sealed with the version it started on,
 * with one call of each tool of that version (three; four on version 2); (b) no
 * non-idempotent call ran more often than once plus the times a recovery ran
 * it again as in doubt (`run.recovered`'s `rerun`, after a decision); (c) and
 * (d): see `failoverViolations`.
 */
export async function verify(input: VerifyInput): Promise<Findings> {
  const { ledger, deaths } = input;
  const byCall = new Map<string, Execution[]>();
  for (const execution of ledger.executions) push(byCall, `${execution.runId} ${execution.callId}`, execution);
  // How many times a recovery ran each call again as in doubt: each allows one more execution.
  const reruns = new Map<string, number>();
  for (const report of ledger.reruns)
    for (const call of report.calls) {
      const key = `${report.runId} ${call.callId}`;
      reruns.set(key, (reruns.get(key) ?? 0) + 1);
    }
  const violations: string[] = [];
  const counts = await checkRuns(input, byCall, reruns, violations);
  const failover = failoverViolations(ledger, deaths, input.leaseMs, input.inDoubtOnlyAfterDeaths);
  violations.push(...failover.violations);
  const killsInsideTools = deaths.filter(
    (death) =>
      death.signal === "SIGKILL" &&
      ledger.executions.some((e) => e.worker === death.worker && e.start < death.diedAt && e.end === undefined),
  ).length;
  return {
    inDoubtRuns: new Set(ledger.inDoubt.map((report) => report.runId)).size,
    ...counts,
    killsInsideTools,
    gaveUp: ledger.gaveUp.size,
    leaseHeld: ledger.leaseHeld,
    takeOvers: ledger.takeOvers,
    lapsedLeases: failover.lapsedLeases,
    violations,
  };
}

/**
 * (c) no two workers ran tools of one run at once unless the first had been
 * killed or had given the run up by then, or its lease had run out by the
 * store's clock (a claim of a live lease shows as such an overlap), and no
 * claim took over; (d) with `inDoubtOnlyAfterDeaths`, every in-doubt report
 * follows the death of the last worker that touched the run, after it touched
 * it, or the end of that worker's lease.
 */
export function failoverViolations(
  ledger: LedgerEntries,
  deaths: readonly Death[],
  leaseMs: number,
  inDoubtOnlyAfterDeaths: boolean,
): { violations: string[]; lapsedLeases: number } {
  const ended = new Map<string, Ended>();
  for (const death of deaths) {
    const gaveUpAt = ledger.gaveUp.get(death.worker);
    const releasedAt = death.signal === "SIGKILL" ? death.signalledAt : (gaveUpAt ?? death.diedAt);
    ended.set(death.worker, { ...death, releasedAt });
  }
  const leases = new LeaseClock(ledger, leaseMs);
  const byRun = new Map<string, Execution[]>();
  for (const execution of ledger.executions) push(byRun, execution.runId, execution);
  const violations: string[] = [];
  for (const [runId, executions] of byRun) violations.push(...overlaps(runId, executions, ended, leases));
  if (ledger.takeOvers > 0) violations.push(`${ledger.takeOvers} claims took a live lease over (takeOver)`);
  if (inDoubtOnlyAfterDeaths)
    for (const report of [...ledger.inDoubt, ...ledger.reruns]) {
      const why = unexplainedInDoubt(report.runId, report.at, ledger.touches.get(report.runId) ?? [], ended, leases);
      if (why !== undefined) violations.push(why);
    }
  return { violations, lapsedLeases: leases.lapsed.size };
}

/**
 * Whether a live worker's lease on a run may have run out by the store's
 * clock when another worker's claim was sent, from the writes of the old
 * worker that the store accepted (one it refused set nothing; one it did not
 * answer may or may not have: a loaded PostgreSQL left renewals unanswered
 * for 5 s, and a verdict cannot go by what it cannot know). The store set a
 * lease between a write's sending and its answer; a renewal always sets it, a save only when it
 * claims the run or when a third of the lease has passed since it was last set
 * (`SAVE_RENEWS_AFTER`). A claim sent at `at` reached the store no earlier, so
 * it took a live lease only when the lease, set as early as its write was
 * sent, outlived `at`: a loaded PostgreSQL answered a claim 1.1 s late, and
 * the lease it set may have run out 400 ms before the next claim.
 */
class LeaseClock {
  /** `<run> <worker>` of each live worker's lease found run out where a claim needed it. */
  readonly lapsed = new Set<string>();
  readonly #ledger: LedgerEntries;
  readonly #ms: number;

  constructor(ledger: LedgerEntries, leaseMs: number) {
    this.#ledger = ledger;
    this.#ms = leaseMs;
  }

  /** When the worker last sent a claim of the run before `at` (`at` itself when the ledger shows none). */
  claimedBefore(runId: string, worker: string, at: number): number {
    const sent = this.#claims(runId).filter((c) => c.worker === worker && c.at <= at);
    return sent.length === 0 ? at : Math.max(...sent.map((c) => c.at));
  }

  ranOut(runId: string, worker: string, at: number): boolean {
    const set = this.#lastSet(runId, worker, at);
    if (set === undefined || set.earliest + this.#ms > at) return false;
    this.lapsed.add(`${runId} ${worker}`);
    return true;
  }

  /** Bounds on when the worker's lease on the run was last set by a write sent before `at`. */
  #lastSet(runId: string, worker: string, at: number): { earliest: number; latest: number } | undefined {
    const renewAfter = this.#ms * SAVE_RENEWS_AFTER;
    const others = this.#claims(runId).filter((c) => c.worker !== worker);
    const writes = (this.#ledger.leaseWrites.get(runId) ?? [])
      .filter((w) => w.worker === worker && w.sent < at && w.outcome === "accepted")
      .sort((a, b) => a.sent - b.sent);
    let set: { earliest: number; latest: number } | undefined;
    let sentBefore = Number.NEGATIVE_INFINITY;
    for (const write of writes) {
      // Another worker's claim in between: the worker's next save claims the run anew.
      if (others.some((c) => c.at > sentBefore && c.at < write.sent)) set = undefined;
      sentBefore = write.sent;
      const sure = { earliest: write.sent, latest: write.answered };
      // A save renews the lease only once a third of it passed since the last set: surely when it was sent a
      // third after the latest that set could be. One that only may have renewed leaves the bounds as they
      // were: a claim after them is not judged a claim of a live lease (the store under test accepted it,
      // and nothing outside the store tells whether that save renewed).
      if (write.kind === "renew" || set === undefined || write.sent - set.latest >= renewAfter) set = sure;
    }
    return set;
  }

  #claims(runId: string): readonly { worker: string; at: number }[] {
    return this.#ledger.claims.get(runId) ?? [];
  }
}

/** (a) and (b) for every run: done, its version's calls done, each ran with one key, non-idempotent ones no more often than announced. */
async function checkRuns(
  { store, runs, ledger, versionOf = () => undefined }: VerifyInput,
  byCall: ReadonlyMap<string, readonly Execution[]>,
  reruns: ReadonlyMap<string, number>,
  violations: string[],
): Promise<{ rerunCalls: number; replayedCalls: number }> {
  const sealer = Sealer.withKeys(KEY);
  let rerunCalls = 0;
  let replayedCalls = 0;
  for (let k = 0; k < runs; k++) {
    const runId = runIdOf(k);
    const latest = await DurableRun.latest(store, sealer, runId).catch((error: unknown) => error as Error);
    if (latest instanceof Error || latest.status !== "done") {
      // A failed run says why (a FlowError, a VersionNotServed, a tool's error).
      const error = latest instanceof Error ? undefined : sealed(latest.data, "error");
      const why = latest instanceof Error ? `lost (${latest.message})` : latest.status;
      violations.push(`${runId} is ${why}${error === undefined ? "" : `: ${String(error)}`}`);
      continue;
    }
    const version = versionOf(k);
    if (sealed(latest.data, "version") !== version)
      violations.push(
        `${runId} started on version ${String(version)} but seals ${String(sealed(latest.data, "version"))}`,
      );
    const records = await readCallLog(store, sealer, runId, latest.calls);
    const done = records.filter((r) => r.kind === "done");
    const tools = done.map((r) => r.tool).sort();
    if (tools.join() !== [...toolsOf(version)].sort().join() || new Set(done.map((r) => r.callId)).size !== done.length)
      violations.push(`${runId} has ${done.length} done records (${tools.join(", ")})`);
    for (const record of done) {
      const call = `${runId} ${record.callId}`;
      const ran = byCall.get(call) ?? [];
      if (ran.length === 1 && ledger.replayed.has(call)) replayedCalls += 1;
      const allowed = reruns.get(call) ?? 0;
      if (ran.length === 0) violations.push(`${runId} ${record.tool} is done but never ran`);
      else if (new Set(ran.map((e) => e.key)).size !== 1)
        violations.push(`${runId} ${record.tool} ran with ${new Set(ran.map((e) => e.key)).size} idempotency keys`);
      else if (NON_IDEMPOTENT.has(record.tool) && ran.length > 1) {
        if (ran.length - 1 <= allowed) rerunCalls += ran.length - 1;
        else
          violations.push(
            `${runId} ${record.tool} ran ${ran.length} times but a recovery ran it again as in doubt ${allowed} times`,
          );
      }
    }
  }
  return { rerunCalls, replayedCalls };
}

/** A field of the envelope a run's checkpoint seals (its `version`, a failed run's `error`), as stored. */
function sealed(data: unknown, field: "version" | "error"): unknown {
  return typeof data === "object" && data !== null ? (data as Record<string, unknown>)[field] : undefined;
}

/**
 * (c) Tools of one run that two processes ran at the same time: allowed only
 * when the earlier one's process had been killed, or had given its runs up,
 * before the later one began. An execution a kill cut short lasts until the death.
 */
function overlaps(
  runId: string,
  executions: readonly Execution[],
  ended: ReadonlyMap<string, Ended>,
  leases: LeaseClock,
): string[] {
  const found: string[] = [];
  for (const later of executions)
    for (const earlier of executions) {
      if (earlier.worker === later.worker || earlier.start > later.start) continue;
      const death = ended.get(earlier.worker);
      const until = earlier.end ?? death?.diedAt ?? Number.POSITIVE_INFINITY;
      if (until <= later.start || (death !== undefined && death.releasedAt <= later.start)) continue;
      if (leases.ranOut(runId, earlier.worker, leases.claimedBefore(runId, later.worker, later.start))) continue;
      found.push(
        `${runId}: ${later.tool} began in worker ${later.worker} while ${earlier.tool} still ran in live worker ${earlier.worker} (${until - later.start} ms overlap): a claim of a live lease`,
      );
    }
  return found;
}

/**
 * (d) A claim that found calls in doubt at `at` is explained when the last
 * worker that touched the run before it (claimed it or began one of its
 * tools) had ended by then, after the touch: killed, or stopped giving it up.
 */
function unexplainedInDoubt(
  runId: string,
  at: number,
  touches: readonly Touch[],
  ended: ReadonlyMap<string, Ended>,
  leases: LeaseClock,
): string | undefined {
  // Each line is dated before it is written: processes may append a little out of order, so take the latest by date.
  const last = touches
    .filter((touch) => touch.at < at)
    .reduce<Touch | undefined>((a, b) => (a === undefined || b.at >= a.at ? b : a), undefined);
  if (last === undefined) return `${runId} was found in doubt, but no worker had touched it`;
  // The claim before found the run in doubt already, and nothing touched it since (a decision's claim after a stop).
  if (last.inDoubt === true) return undefined;
  const death = ended.get(last.worker);
  if (death !== undefined && last.at < death.diedAt && death.releasedAt <= at) return undefined;
  if (leases.ranOut(runId, last.worker, at)) return undefined;
  return `${runId} was found in doubt at ${at}, but worker ${last.worker}, the last to touch it (at ${last.at}), ${death === undefined ? "was never killed" : `ended only at ${death.releasedAt}`}, and its lease was live`;
}
