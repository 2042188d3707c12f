import { describe, expect, it } from "vitest";
import { CheckpointConflict, CheckpointNotFound, IdentityMismatch, newRunId } from "../src/index.js";
import { DurableRun, resumeIdentity } from "../src/runner.js";
import { MemoryCheckpointStore, sealer, startRun } from "./helpers.js";

describe("DurableRun", () => {
  it("refuses a second start of the same run id", async () => {
    const { store } = await startRun();
    await expect(startRun(store)).rejects.toThrow(CheckpointConflict);
  });

  it("reports an unknown run as CheckpointNotFound", async () => {
    await expect(DurableRun.latest(new MemoryCheckpointStore(), sealer, "nope")).rejects.toThrow(CheckpointNotFound);
  });

  it("claims the next step with a new segment; of two racing claims exactly one wins", async () => {
    const { store } = await startRun();
    const latest = await DurableRun.latest(store, sealer, "run-1");
    const results = await Promise.allSettled([
      // Two other workers take the run over from its live starter.
      DurableRun.claim(store, sealer, latest, { takeOver: true }),
      DurableRun.claim(store, sealer, latest, { takeOver: true }),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost[0]?.reason).toBeInstanceOf(CheckpointConflict);
    const claimed = await DurableRun.latest(store, sealer, "run-1");
    expect([claimed.step, claimed.segment]).toEqual([1, 1]);
  });

  it("fences a cut-off worker: its next record and its next save are CheckpointConflict", async () => {
    const { store, run: first } = await startRun();
    await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, "run-1"), { takeOver: true });
    const record = { round: 1, callId: "c", tool: "t", kind: "started", args: {} } as const;
    await expect(first.log.append(record)).rejects.toThrow(/cut off/);
    await expect(first.save("running", {})).rejects.toThrow(CheckpointConflict);
  });

  it("refuses any save after the run ended", async () => {
    const { store, run } = await startRun();
    await run.save("done", {});
    await expect(run.save("running", {})).rejects.toThrow(/ended/);
    await expect(DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, "run-1"))).rejects.toThrow(
      CheckpointConflict,
    );
  });
});

describe("run identity", () => {
  const stored = { user: "ada", thread: "t-1" };

  it("restores user and thread when no ctx is given", () => {
    expect(resumeIdentity("r", stored, undefined)).toEqual(stored);
  });

  it("accepts a ctx naming the same identity", () => {
    expect(resumeIdentity("r", stored, { user: "ada" })).toEqual(stored);
  });

  it("refuses a ctx for anyone else", () => {
    expect(() => resumeIdentity("r", stored, { user: "eve" })).toThrow(IdentityMismatch);
    expect(() => resumeIdentity("r", stored, { thread: "t-2" })).toThrow(IdentityMismatch);
    expect(() => resumeIdentity("r", stored, { principal: "svc" })).toThrow(IdentityMismatch);
  });

  it("needs the ctx back for a run that had a principal", () => {
    const withPrincipal = { ...stored, principal: "svc" };
    expect(() => resumeIdentity("r", withPrincipal, undefined)).toThrow(/principal/);
    expect(() => resumeIdentity("r", withPrincipal, { user: "ada" })).toThrow(IdentityMismatch);
    expect(resumeIdentity("r", withPrincipal, { principal: "svc" })).toEqual(withPrincipal);
  });
});

describe("newRunId", () => {
  it("gives 128 random bits, URL-safe, never the same twice", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newRunId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});
