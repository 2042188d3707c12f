import {
  type DurableEvent,
  decideInDoubt,
  InvalidInput,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  startWorker,
  ToolFailed,
} from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { describe, expect, it } from "vitest";
import { DyingStore, KEY, runnerOn, settle, Tools, ticketsFlow } from "./helpers.js";

const flow = ticketsFlow();
const order = { show: "Hamlet", seats: 2 };

/** A run whose worker died inside charge_card (not idempotent): the call is in doubt. Returns its store, tools and the call's id. */
async function chargeInDoubt() {
  const store = new MemoryCheckpointStore();
  const tools = new Tools();
  const dying = new DyingStore(store, { op: "recordCall", kind: "done", tool: "charge_card", when: "before" });
  void runnerOn(dying, tools.registry()).run(flow, order, { runId: "r" });
  await settle();
  const error = await runnerOn(store, tools.registry())
    .recover(flow, "r")
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RecoveryNeedsDecision);
  const [call] = (error as RecoveryNeedsDecision).calls;
  expect(call).toMatchObject({ tool: "charge_card", why: "started with no result" });
  return { store, tools, callId: call!.callId };
}

async function decidedRecords(store: MemoryCheckpointStore) {
  const latest = await store.latest("r");
  const counts = JSON.parse(latest.sealed.slice(latest.sealed.indexOf(".", 3) + 1)).calls as number[];
  return (await readCallLog(store, Sealer.withKeys(KEY), "r", counts)).filter((r) => r.kind === "decided");
}

describe("decisions on each call in doubt", () => {
  it('{ result }: "it happened, here is what it returned" replays as if it had finished; the tool does not run again', async () => {
    const { store, tools, callId } = await chargeInDoubt();
    const events: DurableEvent[] = [];
    const result = await runnerOn(store, tools.registry(), events).recover(flow, "r", {
      decide: { [callId]: { result: "charged at the till" } },
      by: "ops@example.com",
    });
    expect(result).toMatchObject({ status: "done", state: { note: "mailed Hamlet" } });
    expect(tools.count("charge_card")).toBe(1);
    expect(tools.count("email_tickets")).toBe(1);
    const [decided] = await decidedRecords(store);
    expect(decided).toMatchObject({ callId, decision: "result", result: "charged at the till", by: "ops@example.com" });
    expect(Date.parse(decided!.at!)).toBeGreaterThan(Date.now() - 60_000);
    expect(events.find((e) => e.type === "run.recovered")).toMatchObject({
      decided: [{ callId, tool: "charge_card" }],
    });
  });

  it('"rerun" runs the call again (its idempotency key unchanged); "skip" and { error } fail it as a recorded failure', async () => {
    const rerun = await chargeInDoubt();
    expect(
      await runnerOn(rerun.store, rerun.tools.registry()).recover(flow, "r", { decide: { [rerun.callId]: "rerun" } }),
    ).toMatchObject({ status: "done" });
    expect(rerun.tools.count("charge_card")).toBe(2);

    for (const [decision, text] of [
      ["skip", "Skipped: an operator decided the call must not run."],
      [{ error: "declined at the bank" }, "declined at the bank"],
    ] as const) {
      const { store, tools, callId } = await chargeInDoubt();
      const failed = await runnerOn(store, tools.registry())
        .recover(flow, "r", { decide: { [callId]: decision } })
        .catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(ToolFailed);
      expect(failed).toMatchObject({ tool: "charge_card", error: text });
      expect((await store.latest("r")).status).toBe("failed");
      expect(tools.count("charge_card")).toBe(1);
    }
  });

  it("a decision on a call that is not in doubt, or that is not a decision, is InvalidInput, and nothing is written", async () => {
    const { store, tools, callId } = await chargeInDoubt();
    const before = await store.latest("r");
    const runner = runnerOn(store, tools.registry());
    await expect(runner.recover(flow, "r", { decide: { "1:hold:hold_seats:x:0": "rerun" } })).rejects.toThrow(
      /is not in doubt; the calls in doubt are: /,
    );
    await expect(runner.recover(flow, "r", { decide: { [callId]: "yes" as never } })).rejects.toThrow(InvalidInput);
    await expect(runner.recover(flow, "r", { decide: { [callId]: "rerun" }, by: "" })).rejects.toThrow(
      /by must be a string/,
    );
    expect((await store.latest("r")).step).toBe(before.step);
  });

  it("decideInDoubt records a decision ahead of recovery with only the store and the key; a worker then finishes the run by itself; a second decision on the call is refused", async () => {
    const { store, tools, callId } = await chargeInDoubt();
    const options = { checkpoints: store, checkpointKey: KEY, by: "ops" };
    expect(await decideInDoubt("r", { [callId]: { result: "charged at the till" } }, options)).toEqual([callId]);
    await expect(decideInDoubt("r", { [callId]: "rerun" }, options)).rejects.toThrow(/is not in doubt/);
    expect(await store.leaseOf("r")).toBeUndefined();
    const w = startWorker({
      serve: [runnerOn(store, tools.registry()).served(flow)],
      pollMs: 10,
      stopOnSignals: false,
    });
    for (let i = 0; i < 200 && (await store.latest("r")).status !== "done"; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await w.stop();
    expect((await store.latest("r")).status).toBe("done");
    expect(tools.count("charge_card")).toBe(1);
    expect(await decidedRecords(store)).toMatchObject([{ callId, decision: "result", by: "ops" }]);
  });
});
