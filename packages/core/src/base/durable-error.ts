/** Every stable error code of @durable. Match on `error.code`, not on messages. */
export type DurableErrorCode =
  | "CHECKPOINT_NOT_FOUND"
  | "CHECKPOINT_CONFLICT"
  | "CHECKPOINT_STORE_CORRUPT"
  | "RECOVERY_NEEDS_DECISION"
  | "FLOW_ERROR"
  | "IDENTITY_MISMATCH"
  | "APPROVAL_DENIED"
  | "STORE_UNAVAILABLE"
  | "STORE_NOT_READY"
  | "INVALID_INPUT"
  | "UNRECORDABLE_RESULT"
  | "LEASE_HELD"
  | "RUN_ALREADY_ENDED"
  | "QUEUE_FULL"
  | "STREAM_TOO_LONG"
  | "VERSION_NOT_SERVED"
  | "RUN_FAILED"
  | "RESULT_TIMED_OUT"
  | "TOOL_FAILED"
  | "TOOL_TIMED_OUT"
  | "NON_RETRYABLE"
  | "PATCH_REMOVED";

/**
 * Marks every `DurableError` of every copy of this package: registered with
 * `Symbol.for`, so two installed copies (or a build and its source) share it.
 */
const DURABLE_ERROR = Symbol.for("@durable/core.error");

/**
 * The base of every error @durable throws on purpose.
 *
 * `instanceof` holds across copies of `@durable/core` (an app and a store that
 * each installed one): an error made by another copy is an instance of a class
 * here when it bears the shared brand, has a `code`, and the class's name is in
 * its own chain of classes. So `error instanceof CheckpointConflict` is true for
 * another copy's `CheckpointConflict` and false for its `StoreUnavailable`.
 */
export class DurableError extends Error {
  readonly code: DurableErrorCode;

  constructor(code: DurableErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  static {
    Object.defineProperty(DurableError.prototype, DURABLE_ERROR, { value: true });
  }

  // biome-ignore-start lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about, a subclass too
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== "object" || value === null) return false;
    const branded = value as { [DURABLE_ERROR]?: unknown; code?: unknown };
    if (branded[DURABLE_ERROR] !== true || typeof branded.code !== "string") return false;
    for (let proto = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
      if (Object.hasOwn(proto, "constructor") && proto.constructor?.name === this.name) return true;
    }
    return false;
  }
  // biome-ignore-end lint/complexity/noThisInStatic: see above
}
