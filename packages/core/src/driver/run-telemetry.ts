import type { CheckpointBody } from "../seal/checkpoint.js";
import type { RunEnvelope } from "../run/envelope.js";
import type { RunKind } from "../store/contract.js";
import { instruments, runMetricAttributes } from "../telemetry/metrics.js";
import { AttemptSpan, type RunTrace, traceStart } from "../telemetry/tracing.js";
import type { RunVersion } from "../run/versions.js";

/** Why an attempt of a run began: its start, or the kind of claim. */
export type AttemptWhy = "start" | "recover" | "resume" | "retry" | "wake" | "decision";

/**
 * What a run driver tells OpenTelemetry of its program's runs: the span of each attempt (sealed with the claim or
 * start that begins it), and the counters of starts, claims and takeovers. See docs/protocol.md, "Telemetry".
 */
export class RunTelemetry {
  readonly #program: { readonly kind: RunKind; readonly name: string; readonly version?: RunVersion | undefined };

  constructor(program: { readonly kind: RunKind; readonly name: string; readonly version?: RunVersion | undefined }) {
    this.#program = program;
  }

  /** The trace a run started elsewhere (left to the fleet) seals with its step 0: its start span's. */
  startTrace(runId: string): RunTrace | undefined {
    return traceStart(this.#attributes(runId));
  }

  /**
   * The span of an attempt of run `runId` in the trace `sealed` (a new one, under a start span, for a run this attempt
   * starts). Its `sealed` is the trace the claim (or step 0) saves, with this attempt as the latest.
   */
  attempt(runId: string, why: AttemptWhy, sealed?: RunTrace): AttemptSpan {
    const trace = why === "start" ? this.startTrace(runId) : sealed;
    return new AttemptSpan(this.#attributes(runId), trace, { "durable.claim": why });
  }

  /** `envelope` with the attempt's trace to seal, or `envelope` itself when nothing records (nothing is rewritten). */
  traced<E extends RunEnvelope<unknown>>(envelope: E, attempt: AttemptSpan): E {
    const trace = attempt.sealed;
    return trace === envelope.trace || trace === undefined ? envelope : { ...envelope, trace };
  }

  /** Begins the attempt with `begin` (its claim, or its step 0); one refused ends the attempt's span with its error. */
  async begun<T>(attempt: AttemptSpan, begin: () => T | Promise<T>): Promise<T> {
    try {
      return await begin();
    } catch (error) {
      attempt.end({ error });
      throw error;
    }
  }

  /**
   * Counts a claim that landed, and says whether it took the run over: a drive held it before (one that died, or
   * gave it up). A run left to the fleet is at step 0 with no call yet (the step 0 of a run a drive started lands
   * with that drive's first call); a fork's own row (its first segment) is left to the fleet too, past step 0 with
   * the original's calls: no drive held the fork before.
   */
  claimed(
    attempt: AttemptSpan,
    why: AttemptWhy,
    latest: CheckpointBody,
    envelope: RunEnvelope<unknown>,
    records: readonly unknown[],
  ): boolean {
    const unclaimedFork = envelope.forkedFrom?.segment === latest.segment;
    const takenOver = why === "recover" && !unclaimedFork && (latest.step > 0 || records.length > 0);
    attempt.span.setAttribute("durable.run.taken_over", takenOver);
    this.counted("runsClaimed", { "durable.claim": why });
    if (takenOver) this.counted("runsTakenOver");
    return takenOver;
  }

  /** Adds one to a run counter, with the run's kind and name (and `attributes`). */
  counted(counter: "runsStarted" | "runsClaimed" | "runsTakenOver", attributes: Record<string, string> = {}): void {
    instruments()[counter].add(1, runMetricAttributes(this.#program, attributes));
  }

  #attributes(runId: string) {
    const { kind, name, version } = this.#program;
    return { runId, kind, name, version };
  }
}
