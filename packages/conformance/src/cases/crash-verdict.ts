import type { CallWitness } from "../process/acknowledgments.js";
import { IDEMPOTENT_TOOLS } from "../process/scenarios.js";

/** The witness of a call the killed worker issued no record of. */
export const NOTHING_ISSUED: CallWitness = {
  lastStarted: 0,
  startedAckedLast: false,
  failedAckedLast: undefined,
  failedAcked: new Set(),
  doneAcked: false,
  decidedAcked: false,
};

/** What the trial saw of one call, none of it read from the store under test. */
export interface CallObservation {
  readonly tool: string;
  /** How many attempts the call makes in a run without a crash (its tool fails each but the last). */
  readonly attempts: number;
  /** Executions by the killed worker (the side-effect file), by attempt. */
  readonly before: ReadonlyMap<number, number>;
  /** Executions during recovery, by attempt. */
  readonly after: ReadonlyMap<number, number>;
  /** How many tries recovery took: more than one when the store failed a try with StoreUnavailable. */
  readonly tries: number;
  /** How many of those tries reported the call in doubt (the trial then decided to rerun it, each time). */
  readonly reports: number;
  /**
   * Whether recovery's first report named the call, when that report came
   * before recovery wrote any record of the run (so it shows what the killed
   * worker alone left in doubt); undefined when it did not.
   */
  readonly reportedFirst: boolean | undefined;
  /** What the killed worker issued and the store acknowledged (the acknowledgment file). */
  readonly witness: CallWitness;
  /** Recovery had the store acknowledge a `decided` record of the call (the acknowledgment file, after recovery). */
  readonly decided: boolean;
}

/**
 * The verdict on one call of a crash trial, or undefined when it is right.
 *
 * Why it is sound without trusting the store: the side-effect file is written
 * by the tools (a line per attempt, with its number), and the acknowledgment
 * file by the worker around each `recordCall` (issued before, acked after it
 * resolved); both are appended synchronously, so a SIGKILL loses neither.
 * The protocol promises a resolved record is durable, so after a crash the
 * log holds every acknowledged record, possibly some issued-but-unacknowledged
 * ones, and nothing never issued. A worker issues a call's records one at a
 * time (`started`, then `failed` or `done`, then the next attempt's
 * `started`), each once the one before was acknowledged, so the call's last
 * stored record is the last one issued or, when that one was not
 * acknowledged, the one before. Recovery goes by that record: `started` is in
 * doubt (reported for a non-idempotent tool, whose attempt then reruns only on
 * the trial's decision), `failed` goes on with the next attempt without a
 * decision, `done` replays. Hence, for each call:
 * - done acked: its result is stored, so it is not in doubt and nothing of it runs again;
 * - the last record issued is an acked `started`: a non-idempotent call must be
 *   reported (an idempotent one reruns silently);
 * - the last record issued is an acked `failed`: it is not in doubt (a crash
 *   during the wait goes on with the next attempt);
 * - an attempt whose `failed` was acked never runs again;
 * - reported: `started` must at least have been issued and `done` not acked,
 *   and recovery has the trial's decision to rerun it recorded (a `decided`
 *   record acknowledged), and no decision recorded on a call not reported;
 * - reported, the attempt that reruns is the last one started (its `started`
 *   was issued only once the `failed` before it was acknowledged): it runs
 *   once more in recovery, whether it ran before the kill or not; every other
 *   attempt of a non-idempotent call runs exactly once in all;
 * - every attempt runs before or after the crash (the run ends, and each
 *   attempt but the last fails), at most once in the killed worker, and
 *   recovery runs it at most once.
 * A store that acknowledges a record it then loses (write-behind, a commit
 * after resolving) breaks the first, third, fourth or sixth rule at a kill
 * right after the acknowledgment; one that invents records breaks the fifth.
 *
 * A store that fails a try of recovery with StoreUnavailable may leave a call
 * the try ran without its `done` (or a next attempt without its `failed`): the
 * next try finds it in doubt, reports it and reruns it on the trial's
 * decision. So with more than one try, a non-idempotent attempt runs at most
 * once in all plus once per report of its call, and an attempt in doubt at
 * the crash (its `started` acknowledged last) only once per report; an
 * idempotent attempt at most once per try. The rules on what was in doubt at
 * the crash then read recovery's first report only when it came before
 * recovery wrote any record of the run; the rules on acknowledged `done` and
 * `failed` records hold as they are.
 */
export function callVerdict(seen: CallObservation): string | undefined {
  const { tool, attempts, witness } = seen;
  const reported = seen.reports > 0;
  const retried = seen.tries > 1;
  const idempotent = IDEMPOTENT_TOOLS.has(tool);
  const before = (attempt: number) => seen.before.get(attempt) ?? 0;
  const after = (attempt: number) => seen.after.get(attempt) ?? 0;
  // Calls without retries keep their verdicts' words: "it ran…", not "attempt 1 ran…".
  const its = (attempt: number) => (attempts === 1 ? "" : `attempt ${attempt} `);
  const range = Array.from({ length: attempts }, (_, i) => i + 1);

  const stray = [...seen.before.keys(), ...seen.after.keys()].find((a) => !range.includes(a));
  if (stray !== undefined) return `attempt ${stray} ran, but the tool makes ${attempts} (each but the last fails)`;
  for (const a of range) {
    if (before(a) > 1) return `${its(a)}ran ${before(a)} times before the crash`;
    if (after(a) > 1 && !retried) return `${its(a)}ran ${after(a)} times after the crash`;
    if (before(a) + after(a) === 0) return `${its(a)}never ran, yet the run ended`;
  }
  if (reported && idempotent) return "recovery reported it in doubt, but an idempotent tool reruns without a decision";
  if (witness.doneAcked) {
    if (reported)
      return "recovery reported it in doubt, but the store had acknowledged its `done` record before the crash (a resolved recordCall must be durable)";
    if (range.some((a) => after(a) > 0))
      return "ran again after the crash, but the store had acknowledged its `done` record before the crash (a resolved recordCall must be durable)";
    return undefined;
  }
  if (seen.reportedFirst === true && witness.lastStarted === 0)
    return "recovery reported it in doubt, but the killed worker never issued its `started` record";
  if (seen.reportedFirst === true && witness.failedAckedLast !== undefined)
    return `recovery reported it in doubt, but the store had acknowledged the \`failed\` record of its attempt ${witness.failedAckedLast} and nothing was issued after it (a call between attempts goes on with the next one, without a decision)`;
  const failedAgain = [...witness.failedAcked].find((a) => after(a) > 0);
  if (failedAgain !== undefined)
    return `attempt ${failedAgain} ran again after the crash, but the store had acknowledged its \`failed\` record (a failed attempt never runs again)`;
  if (!idempotent && witness.startedAckedLast && (!reported || seen.reportedFirst === false)) {
    const first = reported ? " first" : "";
    if (attempts === 1)
      return `recovery did not${first} report it in doubt, but the store had acknowledged its \`started\` record and no \`done\` was ever issued (it ran ${before(1)} times before the crash, ${after(1)} after)`;
    const ran = range.map((a) => `attempt ${a}: ${before(a)} before the crash, ${after(a)} after`).join("; ");
    return `recovery did not${first} report it in doubt, but the store had acknowledged the \`started\` record of its attempt ${witness.lastStarted} and nothing was issued after it (${ran})`;
  }
  if (reported && !seen.decided)
    return "recovery reported it in doubt and the trial decided to rerun it, but no `decided` record was acknowledged";
  if (!reported && seen.decided) return "a `decided` record was acknowledged, but recovery did not report it in doubt";
  for (const a of range) {
    const wrong = retried ? boundAfterTries(seen, a, idempotent) : exactAfterOneTry(seen, a, idempotent);
    if (wrong !== undefined) return `${its(a) === "" ? "" : `${its(a).trim()}: `}${wrong}`;
  }
  return undefined;
}

/** One recovery try: an attempt in doubt reruns once on the decision; every other attempt of a non-idempotent call runs once in all. */
function exactAfterOneTry(seen: CallObservation, a: number, idempotent: boolean): string | undefined {
  const [before, after] = [seen.before.get(a) ?? 0, seen.after.get(a) ?? 0];
  const rerun = seen.reports > 0 && a === seen.witness.lastStarted;
  if (rerun && after !== 1)
    return `recovery reported it in doubt and the trial reran it, yet it ran ${after} times after the crash`;
  if (!idempotent && !rerun && before + after !== 1) {
    const why =
      seen.reports > 0
        ? `, though only attempt ${seen.witness.lastStarted} was in doubt`
        : " without being reported in doubt";
    return `a non-idempotent tool ran ${before + after} times (${before} before the crash, ${after} after)${why}`;
  }
  return undefined;
}

/** Tries after StoreUnavailable: each may run an attempt it then could not record, which the next reports again. */
function boundAfterTries(seen: CallObservation, a: number, idempotent: boolean): string | undefined {
  const [before, after] = [seen.before.get(a) ?? 0, seen.after.get(a) ?? 0];
  const tries = `the ${seen.tries} tries of recovery (the store was unavailable)`;
  if (idempotent) return after > seen.tries ? `ran ${after} times after the crash, more than ${tries}` : undefined;
  if (before + after > 1 + seen.reports)
    return `a non-idempotent tool ran ${before + after} times (${before} before the crash, ${after} after), though ${tries} reported it in doubt ${seen.reports} times`;
  const inDoubt = seen.witness.startedAckedLast && a === seen.witness.lastStarted;
  if (inDoubt && after > seen.reports)
    return `it was in doubt at the crash and ran ${after} times after it, though ${tries} reported it in doubt ${seen.reports} times (each rerun needs a decision)`;
  return undefined;
}
