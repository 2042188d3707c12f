import type { RunKind, RunStatus } from "@durable/core/store";
import type { Classification, RunEnvelope } from "@durable/core/runner";

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
  /** Running and released (an operator's action, a worker that died): the next worker to poll claims it. */
  | { readonly for: "worker" };

/**
 * The one place that says what a run waits for, so the list's marks, the
 * run's page and its action forms agree; from its sealed latest checkpoint
 * and envelope, its current round's calls (read for a running run) and
 * whether a worker holds its lease now. A paused loop with nothing pending is a conversation awaiting its
 * next message (as `runToolLoop` reads it); calls that started and stored no
 * outcome wait for a decision only once no worker holds the run (under a
 * live lease they are simply running).
 */
export function waitingFor(
  latest: { readonly kind: RunKind; readonly status: RunStatus },
  envelope: RunEnvelope,
  round: Classification | undefined,
  leaseLive: boolean,
): Waiting | undefined {
  if (latest.status === "paused") {
    if (envelope.pending.length > 0) return { for: "approval", calls: envelope.pending.map((call) => call.callId) };
    return latest.kind === "loop" ? { for: "next message" } : { for: "resume" };
  }
  if (latest.status !== "running") return undefined;
  // Its lease is the sleep's until it wakes; after that the next worker to poll claims it.
  if (envelope.asleep !== undefined)
    return leaseLive ? { for: "wake time", until: envelope.asleep } : { for: "worker" };
  const retryAt = [...(round?.next.values() ?? [])].flatMap((next) => next.notBefore ?? []);
  const retry = retryAt.length > 0 ? ({ for: "retry time", at: Math.min(...retryAt) } as const) : undefined;
  if (leaseLive) return retry;
  const inDoubt = [...(round?.inDoubt.keys() ?? [])];
  if (inDoubt.length > 0) return { for: "decision", calls: inDoubt };
  return retry ?? { for: "worker" };
}

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
    case "worker":
      return "awaits a worker";
  }
}
