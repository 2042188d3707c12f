import { PLAIN_JSON, type ValueCodec } from "../base/codec.js";
import type { StreamWriter } from "../log/run-stream.js";
import type { Identity } from "../base/identity.js";
import { InvalidInput } from "../base/errors.js";
import type { CallLog } from "../log/call-log.js";
import type { InboxEvent } from "../log/inbox.js";
import type { CallRef, EventSink } from "../log/events.js";
import { atOrAfter, type CallPosition, type RunKind } from "../store/contract.js";
import type { BoundAnswer } from "./approvals.js";
import { callSite } from "./call-id.js";
import type { FinishedOutcome, PendingCall, ReplayPlan } from "./replay.js";

/**
 * What became of one call: its result (as the run's codec decodes it), its tool's error or its approval's
 * denial (each recorded), or a wait for an approval.
 */
export type CallOutcome =
  | { readonly status: "ok"; readonly value: unknown }
  | Exclude<FinishedOutcome, { readonly status: "ok" }>
  | { readonly status: "pending" };

/** What the calls of one round share: the log, the replay plan, approval answers, and what happened to each call. */
export interface CallScopeInit {
  readonly kind: RunKind;
  readonly log: CallLog;
  readonly plan: ReplayPlan;
  readonly identity: Identity;
  /** Approval answers stored with the run's latest checkpoint, by call id. */
  readonly answers?: ReadonlyMap<string, BoundAnswer>;
  readonly events?: EventSink | undefined;
  /** Aborted when the worker gave the run up or the drive lost it (`DurableRun.signal`): no call of the round starts after that. */
  readonly signal?: AbortSignal | undefined;
  /** How results that are not plain JSON are stored (default: they must be plain JSON). */
  readonly codec?: ValueCodec | undefined;
  /** Reads the run's inbox, verified; absent when its store has no events capability. */
  readonly inbox?: (() => Promise<readonly InboxEvent[]>) | undefined;
  /** How many events of each name the run's earlier rounds took (`RunEnvelope.taken`). */
  readonly taken?: Readonly<Record<string, number>> | undefined;
  /** An operator woke the run (`RunEnvelope.wokenBefore`): the sleeps and deadlines recorded before this place are over. */
  readonly wokenBefore?: CallPosition | undefined;
  /** The run's stream, when it streams: a tool's `writeData` goes to it. */
  readonly stream?: StreamWriter | undefined;
}

/** What a round waits for: events of these names, having read this many events of the inbox. */
export interface RoundWait {
  readonly names: ReadonlySet<string>;
  /** The fewest events of the inbox any of its waits read: a save that finds more lets the run go on at once. */
  readonly seen: number;
}

/**
 * One round of calls: names them, and records which finished calls of the log they took, which wait on an
 * approval, and which were left in doubt.
 */
export class CallScope {
  readonly init: CallScopeInit;
  /** Calls waiting on an approval: the run pauses after this round. */
  readonly pending: PendingCall[] = [];
  #inDoubt: Error | undefined;
  #asleep: number | undefined;
  #waiting: { names: Set<string>; seen: number } | undefined;
  #inbox: Promise<readonly InboxEvent[]> | undefined;
  readonly #occurrences = new Map<string, number>();
  readonly #claimed = new Set<string>();
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(init: CallScopeInit) {
    this.init = init;
  }

  get runId(): string {
    return this.init.log.runId;
  }

  /** How the round's results are stored. */
  get codec(): ValueCodec {
    return this.init.codec ?? PLAIN_JSON;
  }

  /**
   * Finished calls in the log that no call of this round claimed (their
   * arguments changed, or the code no longer makes them): the round's calls
   * ran without them. Meaningful once the round is complete.
   */
  get unreplayed(): CallRef[] {
    const unclaimed = [...this.init.plan.finished.values()].filter((call) => !this.#claimed.has(call.callId));
    return unclaimed.map(({ callId, tool }) => ({ callId, tool }));
  }

  /**
   * The id of the next call made `within` a part of this round (see
   * `callIdOf`): identical calls are numbered in the order they are issued,
   * which is fine, since they are interchangeable.
   */
  nameCall(within: string, tool: string, argsText: string): string {
    const site = callSite(this.init.plan.round, within, tool, argsText);
    const occurrence = this.#occurrences.get(site) ?? 0;
    this.#occurrences.set(site, occurrence + 1);
    return `${site}:${occurrence}`;
  }

  /** True once a call of this round was named `callId` (`nameCall`): the code reached it. */
  named(callId: string): boolean {
    const cut = callId.lastIndexOf(":");
    return (this.#occurrences.get(callId.slice(0, cut)) ?? 0) > Number(callId.slice(cut + 1));
  }

  /**
   * The error of the first call of this round left in doubt, if any: the round cannot end as if it were
   * settled, even when the code that made the call caught the error.
   */
  get inDoubt(): Error | undefined {
    return this.#inDoubt;
  }

  /** Notes that a call of this round was left in doubt with `error` (a timed-out attempt, an unrecordable result); returns it to throw. */
  leaveInDoubt<E extends Error>(error: E): E {
    this.#inDoubt ??= error;
    return error;
  }

  /** The earliest wake time of the round's sleeps that have not passed (ms since the epoch): the run sleeps until then. */
  get asleep(): number | undefined {
    return this.#asleep;
  }

  /** Notes a sleep of this round that lasts until `until`: the round stops, and the run is saved asleep. */
  sleepUntil(until: number): void {
    this.#asleep = Math.min(this.#asleep ?? until, until);
  }

  /** What the round waits for, when a wait of it found no event. */
  get waiting(): RoundWait | undefined {
    return this.#waiting;
  }

  /** Notes a wait of this round for an event named `name` that found none among the `seen` events of the inbox, until `until`. */
  waitForEvent(name: string, seen: number, until: number): void {
    this.#waiting ??= { names: new Set(), seen };
    this.#waiting.names.add(name);
    this.#waiting.seen = Math.min(this.#waiting.seen, seen);
    this.sleepUntil(until);
  }

  /**
   * The run's inbox, read once per scope (with `fresh`, read again, and kept
   * for the scope's later waits): `InvalidInput` when the store has no events capability.
   */
  inbox(fresh = false): Promise<readonly InboxEvent[]> {
    const read = this.init.inbox;
    if (read === undefined)
      return Promise.reject(
        new InvalidInput("waitForEvent: this run's store has no events capability (sendEvent and inbox)."),
      );
    if (fresh || this.#inbox === undefined) this.#inbox = read();
    return this.#inbox;
  }

  /** True when the sleep or deadline whose record is `at` is over because an operator woke the run after it was recorded. */
  woken(at: CallPosition | undefined): boolean {
    const before = this.init.wokenBefore;
    return before !== undefined && at !== undefined && !atOrAfter(at, before);
  }

  /** Marks a finished call of the log as taken by a call of this round. */
  claim(callId: string): void {
    this.#claimed.add(callId);
  }

  /** Counts a call of this round as in flight until it settles. */
  track(call: Promise<unknown>): void {
    this.#inFlight.add(call);
    const done = () => void this.#inFlight.delete(call);
    call.then(done, done);
  }

  /**
   * Resolves once every call of the round has settled, also those no code
   * awaits any more (a sibling of a call that threw inside `Promise.all`): a
   * round is saved only after its calls' records landed.
   */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
