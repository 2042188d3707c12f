/**
 * What flows and tool loops share through core's run driver, tested once and
 * run against both programs (see programs.ts): recovery from every kind of
 * checkpoint, recoverAll, the checks on open, calls in doubt, approvals, and
 * which errors fail a run and which leave it for recovery.
 */
import { describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  type CheckpointStore,
  type DurableEvent,
  IdentityMismatch,
  LeaseHeld,
  MemoryCheckpointStore,
  NonRetryable,
  RecoveryNeedsDecision,
  StoreUnavailable,
  ToolRegistry,
  ToolTimedOut,
} from "@durable/core";
import { idempotencyKeyFor } from "@durable/core/runner";
import { DyingStore, settle, storeWith } from "@durable/test-utils/stores";
import { Tools } from "@durable/test-utils/tools";
import { sleep, until } from "@durable/test-utils/waiting";
import { PROGRAMS, orderTools, type Program } from "./programs.js";

const ofType = <T extends DurableEvent["type"]>(events: readonly DurableEvent[], type: T) =>
  events.filter((e): e is Extract<DurableEvent, { type: T }> => e.type === type);

/** A run whose worker died right after saving `step`. */
async function crashedAfter(
  program: Program,
  store: MemoryCheckpointStore,
  tools: Tools,
  runId: string,
  step: number,
  ctx?: object,
) {
  void program
    .on(new DyingStore(store, { op: "save", step, when: "after" }), orderTools(tools))
    .start(runId, ctx === undefined ? {} : { ctx });
  await settle();
}

/** A run whose worker hangs inside `tool` (as if it died there), the other call of round 1 finished. */
async function hungInside(program: Program, store: CheckpointStore, tools: Tools, tool: "hold" | "charge") {
  tools.hangInside = tool;
  // On a connection of its own, as another process would be.
  const through = new DyingStore(store, undefined);
  void program.on(through, orderTools(tools)).start("r");
  // Until what the hung worker wrote has landed: both calls' started records and the other call's done (and a loop's model record).
  const records = program.kind === "loop" ? 4 : 3;
  while ((await store.calls("r").catch(() => [])).length < records) await settle(5);
  // It dies there: its lease runs out.
  await through.die();
  tools.hangInside = undefined;
}

/** The store with a delay of 0–3 ms, drawn from `seed`, before and after each read and write: another interleaving of racing workers per seed. */
function jittery(inner: CheckpointStore, seed: number): CheckpointStore {
  let state = seed;
  const pause = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return new Promise((resolve) => setTimeout(resolve, state % 4));
  };
  const delayed = async <T>(op: () => Promise<T>): Promise<T> => {
    await pause();
    const value = await op();
    await pause();
    return value;
  };
  return storeWith(inner, {
    save: (runId, step, row, lease) => delayed(() => inner.save(runId, step, row, lease)),
    recordCall: (runId, segment, seq, sealed) => delayed(() => inner.recordCall(runId, segment, seq, sealed)),
    latest: (runId) => delayed(() => inner.latest(runId)),
    calls: (runId) => delayed(() => inner.calls(runId)),
  });
}

/** The events of a recovery start with its claim's checkpoint.saved, then run.recovered or run.needs-decision with the same step. */
function claimOf(events: readonly DurableEvent[]) {
  const [saved, next] = events;
  expect(saved).toMatchObject({ type: "checkpoint.saved", status: "running" });
  return { step: (saved as Extract<DurableEvent, { type: "checkpoint.saved" }>).step, next };
}

describe.each(PROGRAMS)("$kind on the run driver", (program) => {
  const other = PROGRAMS.find((p) => p !== program)!;

  it.each(program.checkpoints)(
    "recovers a worker that died right after the %s checkpoint (step %i): run.recovered right after the claim, with its step",
    async (_, step) => {
      const store = new MemoryCheckpointStore();
      const tools = new Tools();
      await crashedAfter(program, store, tools, "r", step);
      const events: DurableEvent[] = [];
      const paused = await program.on(store, orderTools(tools)).recover("r", { events });
      const claim = claimOf(events);
      expect(claim.step).toBe(step + 1);
      expect(claim.next).toMatchObject({
        type: "run.recovered",
        kind: program.kind,
        step: step + 1,
        replayed: [],
        rerun: [],
      });
      expect(ofType(events, "run.recovered")).toHaveLength(1);
      expect(paused).toMatchObject({ status: "paused", approvals: [{ callId: program.ids.refund }] });
      expect(await program.on(store, orderTools(tools)).resume("r", { [program.ids.refund]: true })).toMatchObject({
        status: "done",
      });
      expect([tools.count("hold"), tools.count("charge"), tools.count("refund")]).toEqual([1, 1, 1]);
    },
  );

  it("recovers a worker that died right after a resume's claim: the stored decision is spent, run.recovered has the claim's step", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await program.on(store, orderTools(tools)).start("r");
    void program
      .on(new DyingStore(store, { op: "save", step: program.resumeClaim, when: "after" }), orderTools(tools))
      .resume("r", { [program.ids.refund]: true });
    await settle();
    const events: DurableEvent[] = [];
    expect(await program.on(store, orderTools(tools)).recover("r", { events })).toMatchObject({ status: "done" });
    expect(claimOf(events).next).toMatchObject({ type: "run.recovered", step: program.resumeClaim + 1 });
    expect(tools.count("refund")).toBe(1);
  });

  it("recoverAll goes on with every unfinished run of the name: results and errors by run id, ended runs left out", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const worker = program.on(store, orderTools(tools));
    await crashedAfter(program, store, tools, "crashed", 1);
    await crashedAfter(program, store, tools, "someone-else", 1, { user: "ada", principal: "svc" });
    const paused = await worker.start("paused");
    await worker.start("done");
    await worker.resume("done", { [program.ids.refund]: true });
    const events: DurableEvent[] = [];
    // The crashed workers' leases are live: an operator who knows they are gone takes them over.
    const all = await worker.recoverAll({ events, takeOver: true });
    expect([...all.keys()].sort()).toEqual(["crashed", "paused", "someone-else"]);
    expect(all.get("crashed")).toMatchObject({ status: "paused" });
    expect(all.get("paused")).toEqual(paused);
    expect(all.get("someone-else")).toBeInstanceOf(IdentityMismatch);
    expect(ofType(events, "run.recovered").map((e) => e.runId)).toEqual(["crashed"]);
  });

  it("recoverAll leaves a run of the other kind under the same name as it stands: an error for it, nothing written, no tool run", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await crashedAfter(other, store, tools, "theirs", 1);
    const ran = tools.count("hold") + tools.count("charge");
    const all = await program.on(store, orderTools(tools)).recoverAll({ takeOver: true });
    expect(all.get("theirs")).toBeInstanceOf(CheckpointConflict);
    expect(await store.latest("theirs")).toMatchObject({ step: 1, segment: 0 });
    expect(tools.count("hold") + tools.count("charge")).toBe(ran);
  });

  it("checks the caller's identity before anything else: another user of a run of another kind or name learns nothing", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await crashedAfter(program, store, tools, "r", 1, { user: "ada" });
    const eve = { ctx: { user: "eve" } };
    await expect(program.on(store, orderTools(tools)).recover("r", { ...eve, name: "another" })).rejects.toThrow(
      IdentityMismatch,
    );
    await expect(other.on(store, orderTools(tools)).recover("r", eve)).rejects.toThrow(IdentityMismatch);
    await expect(program.on(store, orderTools(tools)).resume("r", {}, eve)).rejects.toThrow(IdentityMismatch);
    expect((await store.latest("r")).step).toBe(1);
  });

  it("refuses a run of another kind or name, writing nothing", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await crashedAfter(program, store, tools, "r", 1);
    await expect(other.on(store, orderTools(tools)).recover("r")).rejects.toThrow(
      new RegExp(`belongs to ${program.kind} "orders", not ${other.kind} "orders"`),
    );
    await expect(program.on(store, orderTools(tools)).recover("r", { name: "another" })).rejects.toThrow(
      CheckpointConflict,
    );
    expect((await store.latest("r")).step).toBe(1);
  });

  it("refuses to recover or resume an ended run", async () => {
    const store = new MemoryCheckpointStore();
    const worker = program.on(store, orderTools(new Tools()));
    await worker.start("r");
    await worker.resume("r", { [program.ids.refund]: true });
    await expect(worker.recover("r")).rejects.toThrow(/the run ended \(done\)/);
    await expect(worker.resume("r", {})).rejects.toThrow(/the run ended \(done\)/);
  });

  it("fails closed on a call in doubt: RecoveryNeedsDecision before any tool runs, the run saved waiting for a decision after its claim, and run.needs-decision with that step and each call", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await hungInside(program, store, tools, "charge");
    const events: DurableEvent[] = [];
    const error = await program
      .on(store, orderTools(tools))
      .recover("r", { events })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    const call = {
      callId: program.ids.charge,
      tool: "charge",
      args: { cents: 4200 },
      idempotencyKey: idempotencyKeyFor("r", program.ids.charge),
      why: "started with no result",
    };
    expect((error as RecoveryNeedsDecision).calls).toEqual([call]);
    const claim = claimOf(events);
    expect(claim.next).toEqual({
      type: "run.needs-decision",
      runId: "r",
      kind: program.kind,
      step: claim.step + 1,
      calls: [call],
      at: expect.any(String),
    });
    expect(ofType(events, "run.recovered")).toEqual([]);
    expect([tools.count("hold"), tools.count("charge")]).toEqual([1, 1]);
    expect(await store.latest("r")).toMatchObject({ step: claim.step + 1, status: "running" });
    const { name } = await store.latest("r");
    const claimable: string[] = [];
    for await (const runId of store.listUnfinished(name, { claimable: true })) claimable.push(runId);
    expect(claimable, "a run waiting for a decision is not claimable").toEqual([]);
  });

  it("with rerunInDoubt, runs the call in doubt again and replays the finished one; run.recovered lists both", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await hungInside(program, store, tools, "charge");
    const events: DurableEvent[] = [];
    expect(await program.on(store, orderTools(tools)).recover("r", { rerunInDoubt: true, events })).toMatchObject({
      status: "paused",
    });
    expect(claimOf(events).next).toMatchObject({
      type: "run.recovered",
      replayed: [{ callId: program.ids.hold, tool: "hold" }],
      rerun: [{ callId: program.ids.charge, tool: "charge" }],
    });
    expect([tools.count("hold"), tools.count("charge")]).toEqual([1, 2]);
  });

  it("runs an idempotent call in doubt again with no decision", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await hungInside(program, store, tools, "hold");
    const events: DurableEvent[] = [];
    expect(await program.on(store, orderTools(tools)).recover("r", { events })).toMatchObject({ status: "paused" });
    expect(claimOf(events).next).toMatchObject({
      type: "run.recovered",
      replayed: [{ tool: "charge" }],
      rerun: [{ tool: "hold" }],
    });
    expect([tools.count("hold"), tools.count("charge")]).toEqual([2, 1]);
  });

  it("pauses for an approval; a recovery returns the pause; one resume of two wins, a third is CheckpointConflict", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const worker = program.on(store, orderTools(tools));
    const events: DurableEvent[] = [];
    const paused = await worker.start("r", { events });
    expect(paused).toEqual({
      status: "paused",
      runId: "r",
      step: program.resumeClaim - 1,
      approvals: [{ callId: program.ids.refund, tool: "refund", args: { cents: 1200 } }],
    });
    expect(ofType(events, "run.paused")).toMatchObject([
      { step: paused.step, approvals: [{ callId: program.ids.refund }] },
    ]);
    expect(await worker.recover("r")).toEqual(paused);
    const decision = { [program.ids.refund]: true };
    const results = await Promise.allSettled([
      worker.resume("r", decision),
      program.on(store, orderTools(tools)).resume("r", decision),
    ]);
    expect(
      results.filter((r) => r.status === "fulfilled").map((r) => (r as PromiseFulfilledResult<unknown>).value),
    ).toMatchObject([{ status: "done" }]);
    expect(results.find((r) => r.status === "rejected")?.reason).toBeInstanceOf(CheckpointConflict);
    await expect(worker.resume("r", decision)).rejects.toThrow(CheckpointConflict);
    expect(tools.count("refund")).toBe(1);
  });

  it("a resume racing two recoveries, at every interleaving the store's delays make: the approved call runs once at most, the others never again", async () => {
    for (let seed = 1; seed <= 24; seed++) {
      const store = new MemoryCheckpointStore();
      const tools = new Tools();
      await program.on(store, orderTools(tools)).start("r");
      const racers = [
        program.on(jittery(store, seed), orderTools(tools)).resume("r", { [program.ids.refund]: true }),
        program.on(jittery(store, seed * 7), orderTools(tools)).recover("r"),
        program.on(jittery(store, seed * 13), orderTools(tools)).recover("r"),
      ];
      for (const result of await Promise.allSettled(racers)) {
        // Each drive has a lease owner of its own: a claim after another's is refused by its live lease.
        if (result.status === "rejected")
          expect(
            [CheckpointConflict, LeaseHeld, RecoveryNeedsDecision].some((type) => result.reason instanceof type),
            String(result.reason),
          ).toBe(true);
      }
      const latest = await store.latest("r");
      if (latest.status !== "done" && latest.status !== "paused") {
        // A claim fenced the resume: the refund is in doubt or runs on this recovery, once.
        await program
          .on(store, orderTools(tools))
          .recover("r")
          .catch((e: unknown) => expect(e).toBeInstanceOf(RecoveryNeedsDecision));
      }
      expect([tools.count("hold"), tools.count("charge")], `seed ${seed}`).toEqual([1, 1]);
      expect(tools.count("refund"), `seed ${seed}`).toBeLessThanOrEqual(1);
    }
  });

  it("refuses to resume a run that is not paused", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    await crashedAfter(program, store, tools, "r", 1);
    await expect(program.on(store, orderTools(tools)).resume("r", {})).rejects.toThrow(
      /the run is running, not paused/,
    );
  });

  it("saves the run failed and emits run.failed when a tool fails it", async () => {
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const declined = () => {
      throw new Error("card declined");
    };
    const worker = program.on(store, orderTools(new Tools(), declined), true);
    await expect(worker.start("r", { events })).rejects.toThrow("card declined");
    const latest = await store.latest("r");
    expect(latest.status).toBe("failed");
    expect(ofType(events, "run.failed")).toEqual([
      {
        type: "run.failed",
        runId: "r",
        kind: program.kind,
        step: latest.step,
        error: "ToolFailed: charge failed: Error: card declined",
        at: expect.any(String),
      },
    ]);
    await expect(worker.recover("r")).rejects.toThrow(/the run ended \(failed\)/);
  });

  it("leaves the run for a decision, not failed, when a tool's error meets a call in doubt in the same round: in doubt wins", async () => {
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    let charged = 0;
    // The hold fails at once; the charge outlasts its timeout, ignores its signal and charges late.
    const registry = new ToolRegistry()
      .tool(
        "hold",
        () => {
          throw new NonRetryable("no seats left");
        },
        { idempotent: true },
      )
      .tool(
        "charge",
        async () => {
          await sleep(150);
          charged += 1;
          return "charged";
        },
        { timeoutMs: 30 },
      )
      .tool("refund", () => "refunded", { approval: true });
    const worker = program.on(store, registry, true);
    await expect(worker.start("r", { events })).rejects.toThrow(ToolTimedOut);
    expect(ofType(events, "run.failed")).toEqual([]);
    expect((await store.latest("r")).status).toBe("running");
    await until(() => charged === 1);
    const recovery: DurableEvent[] = [];
    const error = await worker.recover("r", { events: recovery }).catch((e: unknown) => e);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([
      { callId: program.ids.charge, tool: "charge", why: "started with no result" },
    ]);
    expect(claimOf(recovery).next).toMatchObject({ type: "run.needs-decision", calls: [{ tool: "charge" }] });
    await sleep(200);
    expect(charged).toBe(1);
  });

  it("leaves the run for recovery after a store that did not answer: not failed, recovered later", async () => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const last = program.checkpoints.at(-1)![1];
    const unavailable = storeWith(store, {
      save: (runId, step, row, lease) =>
        step === last
          ? Promise.reject(new StoreUnavailable("the store did not answer"))
          : store.save(runId, step, row, lease),
    });
    const events: DurableEvent[] = [];
    await expect(program.on(unavailable, orderTools(tools)).start("r", { events })).rejects.toThrow(StoreUnavailable);
    expect(ofType(events, "run.failed")).toEqual([]);
    expect((await store.latest("r")).status).toBe("running");
    expect(await program.on(store, orderTools(tools)).recover("r")).toMatchObject({ status: "paused" });
  });

  it("leaves the run for recovery after a lost claim: the fenced worker's CheckpointConflict fails nothing", async () => {
    const store = new MemoryCheckpointStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const tools = new Tools();
    const events: DurableEvent[] = [];
    // The first worker on a connection of its own, as another process would be.
    const first = program
      .on(
        storeWith(store, {}),
        orderTools(tools, async () => gate.then(() => "charged")),
      )
      .start("r", { events });
    await settle();
    // Another worker takes the run over; charge is in doubt, so it stops there, holding the claim.
    await expect(program.on(store, orderTools(tools)).recover("r", { takeOver: true })).rejects.toThrow(
      RecoveryNeedsDecision,
    );
    release();
    await expect(first).rejects.toThrow(CheckpointConflict);
    expect(ofType(events, "run.failed")).toEqual([]);
    expect(await store.latest("r")).toMatchObject({ status: "running", segment: 1 });
  });
});
