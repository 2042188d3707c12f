import { IdentityMismatch, InvalidInput } from "./errors.js";
import { describeType, isObject } from "./option-checks.js";

/** Who a run acts for. Sealed into every checkpoint of the run. */
export interface Identity {
  /** The end user the run acts for. */
  readonly user?: string;
  /** The conversation or thread the run belongs to. */
  readonly thread?: string;
  /** The authenticated caller (a service account, a session); a run that had one needs it back to recover. */
  readonly principal?: string;
}

const FIELDS = ["user", "thread", "principal"] as const;

/** Picks the identity fields out of a ctx, checking each is a string. */
export function identityOf(ctx: Identity | undefined): Identity {
  if (ctx !== undefined && !isObject(ctx)) {
    throw new InvalidInput(`ctx must be an object of user, thread and principal, not ${describeType(ctx)}.`);
  }
  const identity: { -readonly [K in keyof Identity]: string } = {};
  for (const field of FIELDS) {
    const value: unknown = ctx?.[field];
    if (value === undefined) continue;
    if (typeof value !== "string" || value.length === 0 || value.length > 1024) {
      throw new InvalidInput(`ctx.${field} must be a non-empty string of at most 1024 characters.`);
    }
    identity[field] = value;
  }
  return identity;
}

/**
 * The identity a recovery or resume goes on with. Without a ctx the stored
 * user and thread are restored, but a run that had a principal needs its ctx
 * back. A ctx that names anyone else than the stored identity is refused with
 * `IdentityMismatch`.
 */
export function resumeIdentity(runId: string, stored: Identity, ctx: Identity | undefined): Identity {
  if (ctx === undefined) {
    if (stored.principal !== undefined) {
      throw new IdentityMismatch(runId, "the run was started with a principal; pass its ctx to go on with it.");
    }
    return stored;
  }
  const given = identityOf(ctx);
  for (const field of FIELDS) {
    const mustName = field === "principal" && stored.principal !== undefined;
    if ((given[field] !== undefined || mustName) && given[field] !== stored[field]) {
      throw new IdentityMismatch(runId, `the ctx names another ${field} than the run's own.`);
    }
  }
  return stored;
}
