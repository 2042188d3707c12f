import { describe, expect, it } from "vitest";
// Two real copies of the error classes: the build and the source, as an app and a
// store that each installed their own @durable/core would load them.
import * as built from "../dist/base/errors.js";
import * as source from "../src/base/errors.js";

type Copy = typeof source;

/** One error of every class, made by one copy. */
function samplesOf(copy: Copy) {
  return [
    new copy.CheckpointNotFound("r"),
    new copy.CheckpointConflict("r", "another worker holds the run."),
    new copy.CheckpointStoreCorrupt("r", "a signature does not match."),
    new copy.RecoveryNeedsDecision("r", [
      {
        callId: "1:pay:charge_card:d:0",
        tool: "charge_card",
        args: null,
        idempotencyKey: "k",
        why: "started with no result",
      },
    ]),
    new copy.IdentityMismatch("r", "another user."),
    new copy.InvalidInput("a short key."),
    new copy.UnrecordableResult("send", new copy.InvalidInput("result.at: a Date")),
    new copy.ApprovalDenied("refund", "too much"),
    new copy.StoreUnavailable("the store did not answer."),
    new copy.StoreNotReady("the tables are missing; run migrate."),
    new copy.LeaseHeld("r", "host:1:ab", 1_000_000, 999_000),
    new copy.RunAlreadyEnded("r", "done"),
    new copy.QueueFull("r", "q", "concurrency"),
    new copy.StreamTooLong("r", 10),
    new copy.VersionNotServed("r", "orders", 1, 2),
    new copy.PatchRemoved("r", "v2", "body"),
    new copy.RunFailed("r", "Error: card declined"),
    new copy.ResultTimedOut("r", 5_000, "running"),
    new copy.ToolFailed("charge_card", "Error: card declined", 3),
    new copy.ToolTimedOut("charge_card", 500),
    new copy.NonRetryable("card declined"),
    new copy.InvalidToolArgs("charge_card", "cents: expected a number"),
  ];
}

/** Every error class a copy exports, by name. */
function classesOf(copy: Copy): Map<string, typeof source.DurableError> {
  const classes = Object.entries(copy).filter(
    ([, value]) => typeof value === "function" && value.prototype instanceof Error,
  );
  return new Map(classes as Array<[string, typeof source.DurableError]>);
}

const copies = [
  ["made by the build, checked by the source", built as Copy, source],
  ["made by the source, checked by the build", source, built as Copy],
] as const;

describe("instanceof across two copies of @durable/core", () => {
  it("the copies are two: their classes are not the same objects", () => {
    expect(built.CheckpointConflict).not.toBe(source.CheckpointConflict);
    expect(Object.getPrototypeOf(new built.CheckpointConflict("r", "x"))).not.toBe(source.CheckpointConflict.prototype);
  });

  it("the samples cover every error class", () => {
    expect(
      samplesOf(source)
        .map((error) => error.name)
        .sort(),
    ).toEqual([...classesOf(source).keys()].filter((name) => name !== "DurableError").sort());
  });

  describe.each(copies)("%s", (_, maker, checker) => {
    const classes = classesOf(checker);

    it.each(samplesOf(maker).map((error) => [error.name, error] as const))(
      "%s is an instance of its own class, its parents and DurableError, of no other",
      (name, error) => {
        for (const [other, Class] of classes) {
          const parent = name === "InvalidToolArgs" && other === "InvalidInput";
          const expected = other === name || other === "DurableError" || parent;
          expect(error instanceof Class, `${name} instanceof ${other}`).toBe(expected);
        }
        expect(error).toBeInstanceOf(Error);
      },
    );

    it("a subclass of another copy's class is an instance of that class here, and of no sibling", () => {
      class OurConflict extends maker.CheckpointConflict {}
      const error = new OurConflict("r", "lost the claim.");
      expect(error).toBeInstanceOf(checker.CheckpointConflict);
      expect(error).toBeInstanceOf(checker.DurableError);
      expect(error).not.toBeInstanceOf(checker.StoreUnavailable);
    });

    it("the other copy's errors are read as what they are: a lost claim leaves the run for recovery", () => {
      expect(checker.leavesRunForRecovery(new maker.CheckpointConflict("r", "lost the claim."))).toBe(true);
      expect(checker.leavesRunForRecovery(new maker.StoreUnavailable("no answer."))).toBe(true);
      expect(checker.leavesRunForRecovery(new maker.InvalidInput("a short key."))).toBe(false);
    });
  });

  it("a look-alike without the brand is no DurableError: an Error named and coded like one, or a plain object", () => {
    const lookalike = Object.assign(new Error("x"), {
      name: "CheckpointConflict",
      code: "CHECKPOINT_CONFLICT",
      runId: "r",
    });
    class CheckpointConflict extends Error {
      readonly code = "CHECKPOINT_CONFLICT";
    }
    for (const value of [
      lookalike,
      new CheckpointConflict("x"),
      { name: "CheckpointConflict", code: "CHECKPOINT_CONFLICT" },
      null,
      "CheckpointConflict",
    ]) {
      expect(value instanceof source.CheckpointConflict).toBe(false);
      expect(value instanceof source.DurableError).toBe(false);
    }
  });

  it("the brand needs a code: an object made from the prototype alone is not taken for an error", () => {
    const bare = Object.create(built.CheckpointConflict.prototype) as object;
    expect(bare instanceof source.CheckpointConflict).toBe(false);
  });
});
