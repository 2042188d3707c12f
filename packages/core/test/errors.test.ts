import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as core from "@durable/core";
import {
  ApprovalDenied,
  CheckpointConflict,
  CheckpointNotFound,
  CheckpointStoreCorrupt,
  DurableError,
  FlowError,
  IdentityMismatch,
  InvalidInput,
  RecoveryNeedsDecision,
  StoreNotReady,
  StoreUnavailable,
  UnrecordableResult,
} from "@durable/core";
import { leavesRunForRecovery } from "@durable/core/runner";

/** One instance of every error class core exports. */
const samples: readonly DurableError[] = [
  new CheckpointNotFound("r"),
  new CheckpointConflict("r", "another worker holds the run."),
  new CheckpointStoreCorrupt("r", "a signature does not match."),
  new RecoveryNeedsDecision("r", [["charge_card", "started with no result"]]),
  new FlowError("the graph changed."),
  new IdentityMismatch("r", "another user."),
  new InvalidInput("a short key."),
  new UnrecordableResult("send", new InvalidInput("result.at: a Date")),
  new ApprovalDenied("refund", "too much"),
  new StoreUnavailable("the store did not answer."),
  new StoreNotReady("the tables are missing; run migrate."),
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

  it.each(samples.map((error) => [error.name, error] as const))("the README's error table lists %s with its code and what to do", (name, error) => {
    const row = readme.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
    expect(row, `no row for ${name}`).toBeDefined();
    const cells = row!.split("|").map((cell) => cell.trim());
    // | name | code | when | what to do |
    expect(cells[2]).toBe(`\`${error.code}\``);
    expect(cells[3]?.length).toBeGreaterThan(10);
    expect(cells[4]?.length).toBeGreaterThan(10);
  });

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
