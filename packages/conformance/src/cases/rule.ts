import { AssertionError } from "node:assert";
import { inspect } from "node:util";

/** The sections of docs/protocol.md a case can name; each is that heading's anchor. */
export type ProtocolSection =
  | "the-store-rules"
  | "leases"
  | "events"
  | "streams"
  | "queues"
  | "inspection"
  | "forks"
  | "call-records"
  | "what-each-read-verifies"
  | "run-ids-and-names";

/** Where a store author reads the rules the kit checks. */
const PROTOCOL_DOC = "docs/protocol.md";

/**
 * The first line of a failure: which rule of the protocol the store broke,
 * through which operation, and what the rule expected. Vitest appends what
 * came back (its "expected … to …" line and diff), so a store author sees all
 * four without reading the kit.
 */
export function breaks(section: ProtocolSection, operation: string, expected: string): string {
  return `${operation}: expected ${expected} (${PROTOCOL_DOC}#${section})`;
}

/** What came back instead: an error by its class and message, or the value an operation resolved with. */
function described(outcome: { error: unknown } | { value: unknown }): string {
  if ("value" in outcome) return `it resolved with ${inspect(outcome.value, { depth: 2, breakLength: Infinity })}`;
  const { error } = outcome;
  return error instanceof Error ? `it threw ${error.name}: ${error.message}` : `it threw ${inspect(error)}`;
}

/** Expects the operation to reject with an error of `type`, and gives it; the failure says the rule and what came back. */
export async function expectRejects<E extends Error>(
  type: abstract new (...args: never[]) => E,
  rule: string,
  operation: Promise<unknown>,
): Promise<E> {
  const outcome = await operation.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if ("error" in outcome && outcome.error instanceof type) return outcome.error;
  throw new AssertionError({ message: `${rule}; ${described(outcome)}` });
}

/** Awaits an operation the rule says succeeds; a throw fails naming the rule and the error. */
export async function expectResolves<T>(rule: string, operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    throw new AssertionError({ message: `${rule}; ${described({ error })}` });
  }
}
