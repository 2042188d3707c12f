import { canonicalJson, type JsonValue } from "./canonical.js";
import { attemptCall } from "./call-attempts.js";
import { decodeValue, PLAIN_JSON, type ValueCodec } from "./codec.js";
import { callSite } from "./call-id.js";
import type { CallLog } from "./call-log.js";
import { InvalidInput, InvalidToolArgs } from "./errors.js";
import type { CallRef, EventSink } from "./events.js";
import type { Identity } from "./identity.js";
import type { FinishedOutcome, PendingCall, ReplayPlan } from "./replay.js";
import { checkDecisions, checkExecutorArgs, readDecision } from "./options.js";
import type { RunKind } from "./checkpoint-store.js";
import type { ToolDefinition, ToolRegistry } from "./tools.js";
import { validateWith } from "./standard-schema.js";

/** A decision on an approval. */
export interface ApprovalDecision {
  readonly approved: boolean;
  readonly reason?: string;
}

/** A decision bound to the call and the arguments it was given for. */
export interface BoundDecision extends ApprovalDecision {
  readonly callId: string;
  readonly argsText: string;
}

/** What a synchronous approval port is asked. */
export interface ApprovalRequest {
  readonly runId: string;
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
  readonly identity: Identity;
}

/** A callback awaited in process for each call of an approval tool, instead of pausing the run. */
export type ApprovalPort = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

/**
 * What became of one call: its result (as the run's codec decodes it) or its tool's error (both recorded),
 * a wait for an approval, or a denial.
 */
export type CallOutcome =
  | { readonly status: "ok"; readonly value: unknown }
  | Exclude<FinishedOutcome, { readonly status: "ok" }>
  | { readonly status: "pending" }
  | { readonly status: "denied"; readonly reason?: string };

/** What the calls of one round share: the log, the replay plan, decisions, and what happened to each call. */
export interface CallScopeInit {
  readonly kind: RunKind;
  readonly log: CallLog;
  readonly plan: ReplayPlan;
  readonly identity: Identity;
  /** Approval decisions stored with the run's latest checkpoint, by call id. */
  readonly decisions?: ReadonlyMap<string, BoundDecision>;
  readonly events?: EventSink | undefined;
  /** Aborted when the worker gave the run up: no call of the round starts after that. */
  readonly signal?: AbortSignal | undefined;
  /** How results that are not plain JSON are stored (default: they must be plain JSON). */
  readonly codec?: ValueCodec | undefined;
}

/** One round of calls: names them, and records which finished calls of the log they took and which wait on an approval. */
export class CallScope {
  readonly init: CallScopeInit;
  /** Calls waiting on an approval: the run pauses after this round. */
  readonly pending: PendingCall[] = [];
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

/** Options of an `Executor`. */
export interface ExecutorOptions {
  /** A callback awaited for each call of an approval tool, instead of pausing the run. */
  readonly approvals?: ApprovalPort;
}

/**
 * Runs tool calls through the call log. A finished call replays from the log;
 * otherwise each attempt's `started` record is stored before the tool runs,
 * then `done` with its result, or the error that ended the call (see
 * `attemptCall`). A tool's error is an outcome, recorded: replay gives it
 * back without running the tool again; the runner decides what it means (a
 * flow fails with `ToolFailed`, a tool loop tells the model).
 */
export class Executor {
  readonly registry: ToolRegistry;
  readonly #approvals: ApprovalPort | undefined;

  constructor(registry: ToolRegistry, options: ExecutorOptions = {}) {
    checkExecutorArgs(registry, options);
    this.registry = registry;
    this.#approvals = options.approvals;
  }

  /**
   * Makes one call `within` a part of the round (see `CallScope.nameCall`).
   * Arguments that are not plain JSON are `InvalidInput` before anything is
   * written. The tool and the caller see the arguments and the result as the
   * log keeps them (canonical JSON, decoded), on the first run as on replay.
   */
  call(scope: CallScope, within: string, tool: string, args: unknown): Promise<CallOutcome> {
    const outcome = this.#call(scope, within, tool, args);
    scope.track(outcome);
    return outcome;
  }

  async #call(scope: CallScope, within: string, tool: string, given: unknown): Promise<CallOutcome> {
    const definition = this.registry.get(tool);
    const args = await checkedArgs(definition, given);
    const argsText = canonicalJson(args, `the arguments of ${tool}`);
    const jsonArgs = JSON.parse(argsText) as JsonValue;
    const callId = scope.nameCall(within, tool, argsText);
    const ref: CallRef = { callId, tool };
    const { plan } = scope.init;

    const finished = plan.finished.get(callId);
    if (finished !== undefined) {
      scope.claim(callId);
      return decoded(scope, tool, finished.outcome);
    }

    const next = plan.next.get(callId);
    // A call that started was approved already: its next attempt needs no new decision.
    if (definition.approval && next === undefined) {
      const decision = await this.#decide(scope, ref, jsonArgs, argsText);
      if (decision === undefined) return { status: "pending" };
      if (!decision.approved)
        return { status: "denied", ...(decision.reason === undefined ? {} : { reason: decision.reason }) };
    }

    return decoded(scope, tool, await attemptCall({ scope, ref, definition, args: jsonArgs, next }));
  }

  /** The decision for an approval call, or undefined when the run must pause for one. */
  async #decide(
    scope: CallScope,
    ref: CallRef,
    args: JsonValue,
    argsText: string,
  ): Promise<ApprovalDecision | undefined> {
    const stored = scope.init.decisions?.get(ref.callId);
    if (stored !== undefined && stored.argsText === argsText) return stored;
    const entry = { round: scope.init.plan.round, callId: ref.callId, tool: ref.tool, kind: "pending", args } as const;
    if (this.#approvals === undefined) {
      await scope.init.log.append(entry);
      scope.pending.push({ callId: ref.callId, tool: ref.tool, args });
      return undefined;
    }
    await scope.init.log.append({ ...entry, port: true });
    const request = { runId: scope.runId, callId: ref.callId, tool: ref.tool, args, identity: scope.init.identity };
    return readDecision(await this.#approvals(request), `the approval port's answer for ${ref.tool}`);
  }
}

/** A call's outcome with its result as the run's codec decodes the stored form: the same on the first run as on replay. */
function decoded(scope: CallScope, tool: string, outcome: FinishedOutcome): CallOutcome {
  if (outcome.status !== "ok") return outcome;
  return { status: "ok", value: decodeValue(scope.codec, outcome.value, `the stored result of ${tool}`) };
}

/** A call's arguments as its tool's `args` schema outputs them (as given without one): `InvalidToolArgs` when they fail it. */
async function checkedArgs(definition: ToolDefinition, given: unknown): Promise<unknown> {
  if (definition.args === undefined) return given;
  const result = await validateWith(definition.args, given);
  if ("problems" in result) throw new InvalidToolArgs(definition.name, result.problems);
  return result.value;
}

/** Decisions on the pending approvals of a paused run, by call id: `true`/`false`, or `{ approved, reason }`. */
export type Decisions = Readonly<Record<string, boolean | ApprovalDecision>>;

/**
 * Binds each decision to its pending call and the arguments it was asked for,
 * so it is spent on that call only. A decision for a call that is not pending
 * is `InvalidInput`; pending calls with no decision stay pending.
 */
export function bindDecisions(
  runId: string,
  pending: ReadonlyArray<{ readonly callId: string; readonly args: JsonValue }>,
  decisions: Decisions,
): BoundDecision[] {
  checkDecisions(decisions);
  const known = new Set(pending.map((p) => p.callId));
  for (const callId of Object.keys(decisions)) {
    if (!known.has(callId))
      throw new InvalidInput(`Run ${JSON.stringify(runId)} has no pending approval ${JSON.stringify(callId)}.`);
  }
  return pending.flatMap((p) => {
    const given: unknown = decisions[p.callId];
    if (given === undefined) return [];
    const { approved, reason } = readDecision(given, `decisions[${JSON.stringify(p.callId)}]`);
    return [
      { callId: p.callId, argsText: canonicalJson(p.args), approved, ...(reason === undefined ? {} : { reason }) },
    ];
  });
}
