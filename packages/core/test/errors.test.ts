import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as core from "../src/index.js";
import {
  ApprovalDenied,
  CheckpointConflict,
  CheckpointNotFound,
  CheckpointStoreCorrupt,
  DurableError,
  IdentityMismatch,
  InvalidInput,
  LeaseHeld,
  RunAlreadyEnded,
  QueueFull,
  StreamTooLong,
  VersionNotServed,
  RunFailed,
  ResultTimedOut,
  NonRetryable,
  PatchRemoved,
  InvalidToolArgs,
  ToolFailed,
  ToolTimedOut,
  RecoveryNeedsDecision,
  StoreNotReady,
  StoreUnavailable,
  UnrecordableResult,
} from "../src/index.js";
import { errorText, leavesRunForRecovery, MAX_ERROR_TEXT } from "../src/runner.js";

/** One instance of every error class core exports. */
const samples: readonly DurableError[] = [
  new CheckpointNotFound("r"),
  new CheckpointConflict("r", "another worker holds the run."),
  new CheckpointStoreCorrupt("r", "a signature does not match."),
  new RecoveryNeedsDecision("r", [
    {
      callId: "1:pay:charge_card:x:0",
      tool: "charge_card",
      args: {},
      idempotencyKey: "k",
      why: "started with no result",
    },
  ]),
  new IdentityMismatch("r", "another user."),
  new InvalidInput("a short key."),
  new UnrecordableResult("send", new InvalidInput("result.at: a Date")),
  new ApprovalDenied("refund", "too much"),
  new StoreUnavailable("the store did not answer."),
  new StoreNotReady("the tables are missing; run migrate."),
  new LeaseHeld("r", "host:1:ab", 1_000_000, 999_000),
  new RunAlreadyEnded("r", "done"),
  new QueueFull("r", "q", "rate", 250),
  new StreamTooLong("r", 10),
  new VersionNotServed("r", "orders", 1, 2),
  new RunFailed("r", "Error: card declined"),
  new ResultTimedOut("r", 5_000, "running"),
  new ToolFailed("charge_card", "Error: card declined", 3),
  new ToolTimedOut("charge_card", 500),
  new NonRetryable("card declined"),
  new InvalidToolArgs("charge_card", "cents: expected a number"),
  new PatchRemoved("r", "send-receipt-v2", "send"),
];

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

describe("errors", () => {
  it("the samples cover every error class core exports", () => {
    const exported = Object.entries(core)
      .filter(([, value]) => typeof value === "function" && value.prototype instanceof DurableError)
      .map(([name]) => name)
      .sort();
    expect(samples.map((error) => error.name).sort()).toEqual(exported);
  });

  it.each(samples.map((error) => [error.name, error] as const))(
    "the README's error table lists %s with its code and what to do",
    (name, error) => {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, `no row for ${name}`).toBeDefined();
      const cells = row!.split("|").map((cell) => cell.trim());
      // | name | code | when | what to do |
      expect(cells[2]).toBe(`\`${error.code}\``);
      expect(cells[3]?.length).toBeGreaterThan(10);
      expect(cells[4]?.length).toBeGreaterThan(10);
    },
  );

  it("an unrecordable result has its own code, under DurableError, and leaves the run in doubt for recovery", () => {
    const error = new UnrecordableResult("send", new InvalidInput("result.at: a Date"));
    expect(error.code).toBe("UNRECORDABLE_RESULT");
    expect(Object.getPrototypeOf(UnrecordableResult)).toBe(DurableError);
    expect(error).not.toBeInstanceOf(InvalidInput);
    expect(error.message).toMatch(/ran but returned a value that cannot be stored.*in doubt/);
    expect(leavesRunForRecovery(error)).toBe(true);
    expect(leavesRunForRecovery(new InvalidInput("x"))).toBe(false);
  });

  it("a store that is not set up is StoreNotReady (STORE_NOT_READY), keeps its cause, and leaves the run as it stands", () => {
    const cause = new Error('relation "durable_checkpoints" does not exist');
    const error = new StoreNotReady("The store's tables are missing; run its migrate step.", { cause });
    expect(error).toMatchObject({ code: "STORE_NOT_READY", name: "StoreNotReady", cause });
    expect(Object.getPrototypeOf(StoreNotReady)).toBe(DurableError);
    expect(leavesRunForRecovery(error)).toBe(true);
  });
});

describe("errorText", () => {
  it("is `<name>: <message>` for an Error and the value as text otherwise", () => {
    expect(errorText(new TypeError("no seats"))).toBe("TypeError: no seats");
    expect(errorText("plain string")).toBe("plain string");
    expect(errorText(42)).toBe("42");
    expect(errorText(undefined)).toBe("undefined");
    expect(errorText(Symbol("s"))).toBe("Symbol(s)");
  });

  it("never throws: a message getter that throws, a value with no toString, a revoked proxy", () => {
    const hostile = new Error("x");
    Object.defineProperty(hostile, "message", {
      get() {
        throw new Error("no");
      },
    });
    expect(errorText(hostile)).toBe("Error: (its message could not be read)");
    expect(errorText(Object.create(null))).toBe("(a thrown value that cannot be read as text)");
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(errorText(proxy)).toBe("(a thrown value that cannot be read as text)");
  });

  it(`is at most ${MAX_ERROR_TEXT} code units, says how much it left out, and never cuts a surrogate pair`, () => {
    const huge = errorText(new Error("x".repeat(1_000_000)));
    expect(huge.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    expect(huge).toMatch(/^Error: x+ … \(\d+ more characters\)$/);
    const emoji = errorText(`${"a".repeat(MAX_ERROR_TEXT - 41)}${"😀".repeat(MAX_ERROR_TEXT)}`);
    expect(emoji.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no high surrogate without its pair
  });
});
