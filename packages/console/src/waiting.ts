import type { RunKind, RunStatus } from "@durable/core/store";
import type { Classification, RunEnvelope } from "@durable/core/runner";
import { time } from "./html.js";

/**
 * What a run waits for before it goes on; undefined when nothing outside it
 * holds it back (a worker drives it, or it ended).
 */
export type Waiting =
  /** Paused on calls that need an approval's answer. */
  | { readonly for: "approval"; readonly calls: readonly string[] }
  /** A conversation between turns: paused with no call pending, until its next user message. */
  | { readonly for: "next message" }
  /** Paused with no call pending, not a conversation: until someone resumes it. */
  | { readonly for: "resume" }
  /** Calls of its round started and stored no outcome, and no worker holds it: an operator decides (or a worker reruns idempotent tools). */
  | { readonly for: "decision"; readonly calls: readonly string[] }
  /** A call failed and waits between attempts: its next one starts at `at` (ms since the epoch). */
  | { readonly for: "retry time"; readonly at: number }
  /** Asleep (`ctx.sleep`) until `until` (ms since the epoch): a worker wakes it then. */
  | { readonly for: "wake time"; readonly until: number }
  /**
   * Waits for an event of one of `names` (`ctx.waitForEvent`) until `until`, its earliest timeout (ms since the
   * epoch); without `until` it waits with no timeout. The next event sent (`sendEvent`) releases it to a worker.
   */
  | { readonly for: "event"; readonly names: readonly string[]; readonly until?: number }
  /** Running and released (an operator's action, a worker that died): the next worker to poll claims it. */
  | { readonly for: "worker" };

/**
 * The one place that says what a run waits for, so the list's marks, the
 * run's page and its action forms agree; from its sealed latest checkpoint
 * and envelope, its current round's calls (read for a running run) and
 * whether a worker holds its lease now (at `now`, ms, which also tells an
 * event's timeout from a wait with none). A paused loop with nothing pending is a conversation awaiting its
 * next message (as `runToolLoop` reads it); calls that started and stored no
 * outcome wait for a decision only once no worker holds the run (under a
 * live lease they are simply running).
 */
export function waitingFor(
  latest: { readonly kind: RunKind; readonly status: RunStatus },
  envelope: RunEnvelope,
  round: Classification | undefined,
  leaseLive: boolean,
  now: number,
): Waiting | undefined {
  if (latest.status === "paused") {
    if (envelope.pending.length > 0) return { for: "approval", calls: envelope.pending.map((call) => call.callId) };
    return latest.kind === "loop" ? { for: "next message" } : { for: "resume" };
  }
  if (latest.status !== "running") return undefined;
  // Its lease is the sleep's (or the wait's) until it wakes or an event comes; then the next worker to poll claims it.
  if (envelope.asleep !== undefined) {
    if (!leaseLive) return { for: "worker" };
    if (envelope.waitsFor === undefined) return { for: "wake time", until: envelope.asleep };
    // A wait with no timeout sleeps the 3e14-ms cap (docs/protocol.md, "Sleep"): no timeout is that far away.
    const timeout = envelope.asleep - now < NO_TIMEOUT_MS ? { until: envelope.asleep } : {};
    return { for: "event", names: envelope.waitsFor, ...timeout };
  }
  const retryAt = [...(round?.next.values() ?? [])].flatMap((next) => next.notBefore ?? []);
  const retry = retryAt.length > 0 ? ({ for: "retry time", at: Math.min(...retryAt) } as const) : undefined;
  if (leaseLive) return retry;
  const inDoubt = [...(round?.inDoubt.keys() ?? [])];
  if (inDoubt.length > 0) return { for: "decision", calls: inDoubt };
  return retry ?? { for: "worker" };
}

/** A wake time further away than this (a century) is the cap of a wait with no timeout, not a timeout. */
const NO_TIMEOUT_MS = 100 * 365 * 86_400_000;

/** What the list's mark and the run's badge say of it. */
export function waitingLabel(waiting: Waiting): string {
  switch (waiting.for) {
    case "approval":
      return "needs approval";
    case "decision":
      return "needs decision";
    case "next message":
      return "awaits next message";
    case "resume":
      return "awaits resume";
    case "retry time":
      return "retrying";
    case "wake time":
      return "asleep";
    case "event":
      return "awaits event";
    case "worker":
      return "awaits a worker";
  }
}

/** Until when it waits, in words, for a run asleep or waiting for an event (undefined for the others). */
export function waitingUntil(waiting: Waiting): string | undefined {
  switch (waiting.for) {
    case "wake time":
      return `asleep until ${time(waiting.until)}`;
    case "event": {
      const names = `waiting for event ${waiting.names.join(", ")}`;
      return waiting.until === undefined ? `${names} with no timeout` : `${names} until ${time(waiting.until)}`;
    }
    default:
      return undefined;
  }
}
