import { describe, expect, it } from "vitest";
import {
  CheckpointConflict,
  type DurableEvent,
  IdentityMismatch,
  InvalidInput,
  MemoryCheckpointStore,
  type RecoveryNeedsDecision,
  ToolRegistry,
} from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { recoverToolLoop, runToolLoop, type LoopModel, type Message, type ModelReply } from "../src/index.js";
// The store through which a worker dies at a chosen point, shared with the flow tests.
import { DyingStore, forever, settle, type CrashPoint } from "@durable/test-utils/stores";

const KEY = "loop-tests-key-0123456789abcdef-xyz";
const ask: Message[] = [{ role: "user", content: "book two seats for Hamlet" }];

/** A model that answers from a script, counting its calls. */
class ScriptedModel implements LoopModel {
  calls = 0;
  constructor(readonly script: (call: number) => ModelReply) {}
  async reply(): Promise<ModelReply> {
    return this.script(this.calls++);
  }
}

const twoToolsThenDone = (call: number): ModelReply =>
  call === 0
    ? {
        text: "working",
        toolCalls: [
          { id: "a", name: "hold_seats", args: { seats: 2 } },
          { id: "b", name: "charge_card", args: { cents: 8000 } },
        ],
      }
    : { text: "booked", toolCalls: [] };

function tools(hang?: string) {
  const ran = new Map<string, number>();
  const tool = (name: string, result: string) => async () => {
    ran.set(name, (ran.get(name) ?? 0) + 1);
    if (hang === name) await forever();
    return result;
  };
  const registry = new ToolRegistry()
    .tool("hold_seats", tool("hold_seats", "held"), { description: "holds seats" })
    .tool("charge_card", tool("charge_card", "charged"))
    .tool("refund", tool("refund", "refunded"), { approval: true });
  return { ran, registry };
}

async function crashed(
  store: MemoryCheckpointStore,
  model: LoopModel,
  registry: ToolRegistry,
  crash: CrashPoint | undefined,
  maxSteps = 20,
) {
  const through = new DyingStore(store, crash);
  void runToolLoop(model, registry, ask, { runId: "chat", checkpoints: through, checkpointKey: KEY, maxSteps });
  await settle();
  // A worker hung inside a tool (no crash point) dies there: its lease runs out.
  await through.die();
}

describe("runToolLoop", () => {
  it("runs a reply's tool calls, saves after the reply and after the results, and ends on a reply with no call", async () => {
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const { ran, registry } = tools();
    const result = await runToolLoop(new ScriptedModel(twoToolsThenDone), registry, ask, {
      runId: "chat",
      checkpoints: store,
      checkpointKey: KEY,
      events: (e) => void events.push(e),
    });
    expect(result).toMatchObject({ status: "done", text: "booked", stopped: "final", step: 3 });
    expect(result.status === "done" && result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "tool",
      "assistant",
    ]);
    expect([...ran.values()]).toEqual([1, 1]);
    const saved = events.filter((e) => e.type === "checkpoint.saved");
    expect(saved.map((e) => [e.kind, e.stage, e.status])).toEqual([
      ["loop", "start", "running"],
      ["loop", "model-reply", "running"],
      ["loop", "tool-results", "running"],
      ["loop", "model-reply", "done"],
    ]);
  });
});

describe("recoverToolLoop", () => {
  it("after a saved model reply: asks the model nothing for it, replays finished tools, and holds the call in doubt", async () => {
    const store = new MemoryCheckpointStore();
    const model = new ScriptedModel(twoToolsThenDone);
    const dying = tools("charge_card");
    await crashed(store, model, dying.registry, undefined);
    expect(model.calls).toBe(1);

    const { ran, registry } = tools();
    const options = { checkpoints: store, checkpointKey: KEY };
    const error = await recoverToolLoop(model, registry, "chat", options).catch((e: unknown) => e);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([
      { tool: "charge_card", why: "started with no result" },
    ]);
    expect(model.calls).toBe(1);
    const result = await recoverToolLoop(model, registry, "chat", { ...options, rerunInDoubt: true });
    expect(result).toMatchObject({ status: "done", text: "booked" });
    expect(model.calls).toBe(2);
    expect(ran.get("hold_seats") ?? 0).toBe(0); // replayed from the log
    expect(ran.get("charge_card")).toBe(1);
  });

  it("between two model calls: no finished tool runs again and the saved reply is not asked again", async () => {
    const store = new MemoryCheckpointStore();
    const model = new ScriptedModel(twoToolsThenDone);
    await crashed(store, model, tools().registry, { op: "save", step: 2, when: "after" });
    const { ran, registry } = tools();
    const result = await recoverToolLoop(model, registry, "chat", { checkpoints: store, checkpointKey: KEY });
    expect(result).toMatchObject({ status: "done", text: "booked" });
    expect(ran.size).toBe(0);
    expect(model.calls).toBe(2);
  });

  it("counts maxSteps over the whole run: a run that used 3 of 5 before dying gets 2 more", async () => {
    const store = new MemoryCheckpointStore();
    const always = new ScriptedModel((n) => ({
      text: `step ${n}`,
      toolCalls: [{ id: `c${n}`, name: "hold_seats", args: { n } }],
    }));
    // Steps: 0 start; then per model call a reply and a tool-results checkpoint. Die after the 3rd call's results (step 6).
    await crashed(store, always, tools().registry, { op: "save", step: 6, when: "after" }, 5);
    expect(always.calls).toBe(3);
    const result = await recoverToolLoop(always, tools().registry, "chat", { checkpoints: store, checkpointKey: KEY });
    expect(result).toMatchObject({ status: "done", stopped: "max-steps" });
    expect(always.calls).toBe(5);
  });

  it("pauses for an approval; runToolLoop with the same runId resumes it; a second resume is CheckpointConflict", async () => {
    const R = callIdOf(1, "r", "refund", { cents: 500 });
    const store = new MemoryCheckpointStore();
    const model = new ScriptedModel((n) =>
      n === 0
        ? { text: "", toolCalls: [{ id: "r", name: "refund", args: { cents: 500 } }] }
        : { text: "refunded", toolCalls: [] },
    );
    const { ran, registry } = tools();
    const options = { runId: "chat", checkpoints: store, checkpointKey: KEY, ctx: { user: "ada" } };
    const paused = await runToolLoop(model, registry, ask, options);
    expect(paused).toEqual({
      status: "paused",
      runId: "chat",
      step: 2,
      approvals: [{ callId: R, tool: "refund", args: { cents: 500 } }],
    });
    const { runId: _runId, ...recovering } = options;
    expect(await recoverToolLoop(model, registry, "chat", recovering)).toEqual(paused);

    const results = await Promise.allSettled([
      runToolLoop(model, registry, [], { ...options, answers: { [R]: true } }),
      runToolLoop(model, registry, [], { ...options, answers: { [R]: true } }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")?.reason).toBeInstanceOf(CheckpointConflict);
    expect(ran.get("refund")).toBe(1);
    expect(model.calls).toBe(2);
    await expect(runToolLoop(model, registry, [], { ...options, answers: { [R]: true } })).rejects.toThrow(
      CheckpointConflict,
    );
  });
});

const A = callIdOf(1, "a", "refund", { cents: 1 });
const B = callIdOf(1, "b", "refund", { cents: 2 });

describe("decisions over several pauses of one round", () => {
  it("keeps a decision given at the first resume when the round pauses again for another call", async () => {
    const store = new MemoryCheckpointStore();
    const model = new ScriptedModel((n) =>
      n === 0
        ? {
            text: "",
            toolCalls: [
              { id: "a", name: "refund", args: { cents: 1 } },
              { id: "b", name: "refund", args: { cents: 2 } },
            ],
          }
        : { text: "done", toolCalls: [] },
    );
    const { ran, registry } = tools();
    const options = { runId: "chat", checkpoints: store, checkpointKey: KEY };
    const first = await runToolLoop(model, registry, ask, options);
    expect(first.status === "paused" && first.approvals.map((a) => a.callId)).toEqual([A, B]);
    const second = await runToolLoop(model, registry, [], {
      ...options,
      answers: { [A]: { approved: false, reason: "no" } },
    });
    expect(second.status === "paused" && second.approvals.map((a) => a.callId)).toEqual([B]);
    const done = await runToolLoop(model, registry, [], { ...options, answers: { [B]: true } });
    expect(done.status === "done" && done.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      "denied: no",
      "refunded",
    ]);
    expect(ran.get("refund")).toBe(1);
  });
});

describe("a paused loop's decisions and identity", () => {
  const refundOnce = (n: number): ModelReply =>
    n === 0
      ? { text: "", toolCalls: [{ id: "r", name: "refund", args: { cents: 500 } }] }
      : { text: "done", toolCalls: [] };

  it.each([["false"], ["no"], [{ approved: "false" }]])(
    "refuses the decision %j: nothing is refunded, the loop stays paused",
    async (given) => {
      const store = new MemoryCheckpointStore();
      const { ran, registry } = tools();
      const options = { runId: "chat", checkpoints: store, checkpointKey: KEY };
      const paused = await runToolLoop(new ScriptedModel(refundOnce), registry, ask, options);
      const callId = paused.status === "paused" ? paused.approvals[0]!.callId : "";
      await expect(
        runToolLoop(new ScriptedModel(refundOnce), registry, [], {
          ...options,
          answers: { [callId]: given as never },
        }),
      ).rejects.toThrow(InvalidInput);
      expect(ran.get("refund")).toBeUndefined();
      expect((await store.latest("chat")).status).toBe("paused");
    },
  );

  it("checks the caller's identity before telling whose loop it is", async () => {
    const store = new MemoryCheckpointStore();
    const { registry } = tools();
    await runToolLoop(new ScriptedModel(refundOnce), registry, ask, {
      runId: "chat",
      checkpoints: store,
      checkpointKey: KEY,
      ctx: { user: "ada" },
    });
    const intruder = { checkpoints: store, checkpointKey: KEY, ctx: { user: "eve" }, name: "another-loop" };
    await expect(recoverToolLoop(new ScriptedModel(refundOnce), registry, "chat", intruder)).rejects.toThrow(
      IdentityMismatch,
    );
  });
});
