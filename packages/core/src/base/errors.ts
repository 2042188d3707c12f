import { DurableError } from "./durable-error.js";
import type { JsonValue } from "./json.js";

export { DurableError, type DurableErrorCode } from "./durable-error.js";
export { PatchRemoved, VersionNotServed } from "./code-errors.js";

/** Nothing is stored for the run id. */
export class CheckpointNotFound extends DurableError {
  readonly runId: string;

  constructor(runId: string) {
    super("CHECKPOINT_NOT_FOUND", `No checkpoint is stored for run ${JSON.stringify(runId)}.`);
    this.runId = runId;
  }
}

/**
 * The store refused a write: another worker holds the run (its step or segment
 * moved on), the run ended, or the run belongs to another flow.
 */
export class CheckpointConflict extends DurableError {
  readonly runId: string;

  constructor(runId: string, reason: string, options?: { cause?: unknown }) {
    super("CHECKPOINT_CONFLICT", `Run ${JSON.stringify(runId)}: ${reason}`, options);
    this.runId = runId;
  }
}

/**
 * A claim of a run another worker holds: its lease is live by the store's
 * clock. Nothing was written. Leave the run to its owner, or claim it with
 * `takeOver: true` when that worker is known to be gone.
 */
export class LeaseHeld extends DurableError {
  readonly runId: string;
  readonly owner: string;
  /** When the lease runs out, by the store's clock (ms since the epoch). */
  readonly expiresAt: number;

  constructor(runId: string, owner: string, expiresAt: number, now: number) {
    super(
      "LEASE_HELD",
      `Run ${JSON.stringify(runId)} is held by worker ${JSON.stringify(owner)} until ${new Date(expiresAt).toISOString()} ` +
        `(${Math.max(0, Math.round(expiresAt - now))} ms from now by the store's clock); ` +
        "it is claimable once the lease runs out, or now with { takeOver: true }.",
    );
    this.runId = runId;
    this.owner = owner;
    this.expiresAt = expiresAt;
  }
}

/**
 * An event sent to a run that ended (`done` or `failed`): nothing was
 * written. A resend of an event the run already holds is not refused: it is
 * a no-op, whatever became of the run.
 */
export class RunAlreadyEnded extends DurableError {
  readonly runId: string;
  readonly status: "done" | "failed";

  constructor(runId: string, status: "done" | "failed") {
    super("RUN_ALREADY_ENDED", `Run ${JSON.stringify(runId)} ended (${status}): it takes no more events.`);
    this.runId = runId;
    this.status = status;
  }
}

/**
 * A take of a queued run that its queue's limits refuse, by the store's clock
 * (see docs/protocol.md, "Queues"): `concurrency` (the queue's other runs
 * holding a lease number its limit), `key` (those of its concurrency key do),
 * or `rate` (the queue started its limit of runs in the window; try again in
 * `retryAfterMs`). Nothing was written: the run stays queued.
 */
export class QueueFull extends DurableError {
  readonly runId: string;
  readonly queue: string;
  readonly limit: "concurrency" | "key" | "rate";
  /** For `rate`: in how many ms, by the store's clock, the window has room again. */
  readonly retryAfterMs: number | undefined;

  constructor(runId: string, queue: string, limit: "concurrency" | "key" | "rate", retryAfterMs?: number) {
    const why = {
      concurrency: "holds as many runs as its concurrency limit",
      key: "holds as many runs of this run's concurrency key as its per-key limit",
      rate: `started as many runs as its rate limit allows in the window (room again in ${Math.max(0, Math.ceil(retryAfterMs ?? 0))} ms)`,
    }[limit];
    super("QUEUE_FULL", `Run ${JSON.stringify(runId)} waits its turn: queue ${JSON.stringify(queue)} ${why}.`);
    this.runId = runId;
    this.queue = queue;
    this.limit = limit;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A run's stream reached its limit of parts (`stream.maxParts`): its drive
 * wrote no more, so a follower cannot give what came after. The run itself
 * went on; its saved data (`readToolLoop`) holds where it stands.
 */
export class StreamTooLong extends DurableError {
  readonly runId: string;
  readonly limit: number;

  constructor(runId: string, limit: number) {
    super(
      "STREAM_TOO_LONG",
      `Run ${JSON.stringify(runId)}: its stream reached its limit of ${limit} parts, and holds nothing after: read the run's saved data instead, or start it with a higher stream.maxParts.`,
    );
    this.runId = runId;
    this.limit = limit;
  }
}

/** A run that a handle waited for (`RunHandle.result`) ended `failed`: `error` is its error text (`Cancelled: …` for a cancel). */
export class RunFailed extends DurableError {
  readonly runId: string;
  readonly error: string;

  constructor(runId: string, error: string) {
    super("RUN_FAILED", `Run ${JSON.stringify(runId)} failed: ${error}`);
    this.runId = runId;
    this.error = error;
  }
}

/** `RunHandle.result({ timeoutMs })` saw the run not done yet when `timeoutMs` passed: the run goes on. */
export class ResultTimedOut extends DurableError {
  readonly runId: string;

  constructor(runId: string, timeoutMs: number, status: string) {
    super(
      "RESULT_TIMED_OUT",
      `Run ${JSON.stringify(runId)} was not done within ${timeoutMs} ms (it is ${status}); it goes on: ask its handle again later.`,
    );
    this.runId = runId;
  }
}

/** A stored row is unreadable, or its signature or numbering does not match. */
export class CheckpointStoreCorrupt extends DurableError {
  readonly runId: string | undefined;

  constructor(runId: string | undefined, reason: string, options?: { cause?: unknown }) {
    const where = runId === undefined ? "" : `Run ${JSON.stringify(runId)}: `;
    super("CHECKPOINT_STORE_CORRUPT", `${where}${reason}`, options);
    this.runId = runId;
  }
}

/** Why a call is in doubt, as `RecoveryNeedsDecision.calls` reports it. */
export type InDoubtReason =
  | "started with no result"
  | "result could not be recorded"
  | "was waiting on an approval port";

/** A call that may or may not have run: what an operator checks at the tool's system. */
export interface InDoubtCall {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
  /** The key the tool was given (`idempotencyKey()`): look the call up with it at its system. */
  readonly idempotencyKey: string;
  readonly why: InDoubtReason;
}

/**
 * Calls of the cut-short round may or may not have run, and their tools are
 * not idempotent. Check them at their system, then recover with `rerunInDoubt: true`.
 */
export class RecoveryNeedsDecision extends DurableError {
  readonly runId: string;
  /** Every call in doubt whose tool is not idempotent, in log order. */
  readonly calls: readonly InDoubtCall[];

  constructor(runId: string, calls: readonly InDoubtCall[]) {
    const list = calls.map(({ tool, why }) => `${tool} (${why})`).join(", ");
    super(
      "RECOVERY_NEEDS_DECISION",
      `Run ${JSON.stringify(runId)} has calls in doubt: ${list}. Check each at its system (by its idempotency key), ` +
        'then recover with { decide: { [callId]: "rerun" | "skip" | { result } | { error } } }, or { rerunInDoubt: true } to run them all again.',
    );
    this.runId = runId;
    this.calls = calls;
  }
}

/** A recovery or resume names another end user, thread or principal than the run's own. */
export class IdentityMismatch extends DurableError {
  readonly runId: string;

  constructor(runId: string, reason: string) {
    super("IDENTITY_MISMATCH", `Run ${JSON.stringify(runId)}: ${reason}`);
    this.runId = runId;
  }
}

/**
 * An argument or option cannot be used as given (a short key, an option of the
 * wrong type, a value that is not plain JSON, a bad run id). Nothing was written.
 */
export class InvalidInput extends DurableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("INVALID_INPUT", message, options);
  }
}

/**
 * A tool ran, but its result is not plain JSON, so it could not be stored.
 * Unlike `InvalidInput`, something happened: the call is recorded
 * `unrecordable` and is in doubt, and the run is left as it stands for
 * recovery to decide (check the tool's system, then recover).
 */
export class UnrecordableResult extends DurableError {
  readonly tool: string;

  constructor(tool: string, cause: InvalidInput) {
    super(
      "UNRECORDABLE_RESULT",
      `Tool ${tool} ran but returned a value that cannot be stored (${cause.message}); the call is in doubt. ` +
        "Return values the runner can store (plain JSON, or what its codec encodes), then recover the run.",
      { cause },
    );
    this.tool = tool;
  }
}

/**
 * A tool call failed for good: its tool threw (or timed out) on its last
 * attempt, or with an error not worth retrying. The failure is recorded in the
 * call log, so a recovery gives the same error without running the tool
 * again. On the worker where it happened, `cause` is what the tool threw.
 */
export class ToolFailed extends DurableError {
  readonly tool: string;
  /** What the tool threw, as recorded: `<name>: <message>`. */
  readonly error: string;
  /** The attempts made, crashes of other workers included. */
  readonly attempts: number;

  constructor(tool: string, error: string, attempts: number, options?: { cause?: unknown }) {
    const after = attempts > 1 ? ` after ${attempts} attempts` : "";
    super("TOOL_FAILED", `${tool} failed${after}: ${error}`, options);
    this.tool = tool;
    this.error = error;
    this.attempts = attempts;
  }
}

/**
 * An attempt of a tool with `timeoutMs` did not finish in time: its
 * `ctx.signal` was aborted with it. An idempotent tool's attempt is failed
 * and retried; any other's call is left in doubt (the attempt may still act),
 * and the run is left for recovery, where it waits for a decision.
 */
export class ToolTimedOut extends DurableError {
  constructor(tool: string, timeoutMs: number) {
    super("TOOL_TIMED_OUT", `${tool} did not finish within ${timeoutMs} ms.`);
  }
}

/**
 * Thrown by a tool (or given as `cause`) to say another attempt would not
 * help (a declined card, a bad request): the call fails at once, whatever
 * attempts its retry policy has left.
 */
export class NonRetryable extends DurableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("NON_RETRYABLE", message, options);
  }
}

/**
 * A call's arguments fail its tool's `args` schema. Nothing was written: the
 * tool did not run. A tool loop gives the message to the model; in a flow it
 * fails the node, as any `InvalidInput`.
 */
export class InvalidToolArgs extends InvalidInput {
  readonly tool: string;
  /** Each failing field and why, as one line. */
  readonly problems: string;

  constructor(tool: string, problems: string) {
    super(`The arguments of ${tool} are not valid: ${problems}.`);
    this.tool = tool;
    this.problems = problems;
  }
}

/** A call that needed an approval was denied. */
export class ApprovalDenied extends DurableError {
  readonly tool: string;
  readonly reason: string | undefined;

  constructor(tool: string, reason: string | undefined) {
    super("APPROVAL_DENIED", `The call of ${tool} was denied${reason === undefined ? "" : `: ${reason}`}.`);
    this.tool = tool;
    this.reason = reason;
  }
}

/**
 * The store could not be reached, or did not confirm a write: whether the
 * write was applied is unknown. The run is left as it is; recover it once the
 * store answers. Stores wrap their driver's errors in it, with the cause.
 */
export class StoreUnavailable extends DurableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("STORE_UNAVAILABLE", message, options);
  }
}

/**
 * The store answered, but its schema is not set up (tables missing or older
 * than this version). Retrying does not help: run the store's migrate step.
 */
export class StoreNotReady extends DurableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("STORE_NOT_READY", message, options);
  }
}

/**
 * True for errors of the durable machinery after which a run is left as it
 * stands for a recovery (a lost claim, a corrupt or unreachable store, a call
 * in doubt) rather than saved as failed, as a tool's or node's own error is.
 */
export function leavesRunForRecovery(error: unknown): boolean {
  return (
    error instanceof CheckpointConflict ||
    error instanceof CheckpointStoreCorrupt ||
    error instanceof StoreUnavailable ||
    error instanceof StoreNotReady ||
    error instanceof UnrecordableResult ||
    error instanceof ToolTimedOut ||
    error instanceof RecoveryNeedsDecision
  );
}

/** How long a recorded error text may be, in UTF-16 code units: a tool's error goes into checkpoints and prompts. */
export const MAX_ERROR_TEXT = 2000;

/**
 * An error as one line of text, `<name>: <message>` (or the thrown value as
 * text), at most `MAX_ERROR_TEXT` long. It never throws: a thrown value that
 * is not an `Error`, or whose `name` or `message` getter throws, still gets a text.
 */
export function errorText(error: unknown): string {
  const read = (get: () => unknown): string | undefined => {
    try {
      return String(get());
    } catch {
      return undefined;
    }
  };
  const text =
    read(() => error instanceof Error) === "true"
      ? `${read(() => (error as Error).name) ?? "Error"}: ${read(() => (error as Error).message) ?? "(its message could not be read)"}`
      : (read(() => error) ?? "(a thrown value that cannot be read as text)");
  return capText(text, MAX_ERROR_TEXT);
}

/** `text` cut to at most `max` code units (never inside a surrogate pair), saying how much was left out. */
function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 40; // room for the note, whose number has at most 16 digits
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1; // a high surrogate whose pair would be cut off
  return `${text.slice(0, end)} … (${text.length - end} more characters)`;
}
