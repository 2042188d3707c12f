import { describe, expect, it } from "vitest";
import type { JsonObject } from "@durable/core/runner";
import { type DurableEvent, InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import {
  cancelToolLoop,
  recoverToolLoop,
  runToolLoop,
  type LoopModel,
  type Message,
  type ModelReply,
} from "../src/index.js";

/** A model answering from `replies` in turn, keeping the histories it was asked with. */
function scripted(replies: readonly ModelReply[]) {
  const asked: (readonly Message[])[] = [];
  const model: LoopModel = {
    async reply(messages) {
      asked.push(messages);
      const reply = replies[asked.length - 1];
      if (reply === undefined) throw new Error(`no reply ${asked.length}`);
      return reply;
    },
  };
  return { model, asked };
}

const say = (text: string): ModelReply => ({ text, toolCalls: [] });
const call = (id: string, name: string, args: JsonObject = {}): ModelReply => ({
  text: "",
  toolCalls: [{ id, name, args }],
});
const user = (content: string): Message => ({ role: "user", content });

describe("a conversation on one run id", () => {
  it("takes the next user message after a turn and goes on with the same history and run id", async () => {
    const store = new MemoryCheckpointStore();
    const events: DurableEvent[] = [];
    const registry = new ToolRegistry().tool("hold", (a: { seats: number }) => ({ held: a.seats }));
    const { model, asked } = scripted([call("c1", "hold", { seats: 2 }), say("Two held."), say("Paid.")]);
    const options = { runId: "chat", checkpoints: store, events: (e: DurableEvent) => void events.push(e) };
    const first = await runToolLoop(model, registry, [user("Two seats")], { ...options, conversation: true });
    expect(first).toMatchObject({ status: "awaiting-user", runId: "chat", text: "Two held.", turn: 1 });
    // The run waits saved paused, with no approval pending and no lease.
    expect(events.filter((e) => e.type === "run.paused").at(-1)).toMatchObject({ approvals: [] });
    expect(await store.leaseOf("chat")).toBeUndefined();

    const second = await runToolLoop(model, registry, [user("Pay for them")], options);
    expect(second).toMatchObject({ status: "awaiting-user", runId: "chat", text: "Paid.", turn: 2 });
    expect(asked[2]?.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    if (second.status !== "awaiting-user") throw new Error(second.status);
    expect(second.steps).toHaveLength(3);
    expect(second.messages.at(-1)).toEqual({ role: "assistant", content: "Paid." });
  });

  it("counts maxSteps per turn, and a next message may set another", async () => {
    const registry = new ToolRegistry().tool("look", () => "nothing");
    const { model } = scripted([call("a", "look"), call("b", "look"), call("c", "look"), say("Found it.")]);
    const options = { runId: "steps", checkpoints: new MemoryCheckpointStore() };
    const first = await runToolLoop(model, registry, [user("Look")], { ...options, conversation: true, maxSteps: 2 });
    expect(first).toMatchObject({ status: "awaiting-user", stopped: "max-steps" });
    // The second turn has its own two steps, though the run made two already.
    const second = await runToolLoop(model, registry, [user("Look again")], options);
    expect(second).toMatchObject({ status: "awaiting-user", stopped: "final", text: "Found it." });
    const third = scripted([call("d", "look"), say("never")]);
    await expect(
      runToolLoop(third.model, registry, [user("Once more")], { ...options, maxSteps: 1 }),
    ).resolves.toMatchObject({ stopped: "max-steps", turn: 3 });
    expect(third.asked).toHaveLength(1);
  });

  it("gives a waiting conversation back from recoverToolLoop as it stands, asking the model nothing", async () => {
    const store = new MemoryCheckpointStore();
    const { model } = scripted([say("Hello.")]);
    await runToolLoop(model, new ToolRegistry(), [user("Hi")], { runId: "c", checkpoints: store, conversation: true });
    const silent = scripted([]);
    await expect(recoverToolLoop(silent.model, new ToolRegistry(), "c", { checkpoints: store })).resolves.toMatchObject(
      { status: "awaiting-user", text: "Hello.", messages: [user("Hi"), { role: "assistant", content: "Hello." }] },
    );
    expect(silent.asked).toHaveLength(0);
  });

  it("pauses for an approval within a turn, resumes as today, then waits for the user", async () => {
    const store = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool("charge", () => "charged", { approval: true });
    const { model } = scripted([call("c1", "charge", { cents: 5 }), say("Charged."), say("Bye.")]);
    const options = { runId: "a", checkpoints: store };
    const paused = await runToolLoop(model, registry, [user("Charge me")], { ...options, conversation: true });
    if (paused.status !== "paused") throw new Error(paused.status);
    // A message is not a decision: the pause stands.
    await expect(runToolLoop(model, registry, [user("hello?")], options)).rejects.toThrow(
      /paused for approvals: resume it with answers/,
    );
    const callId = paused.approvals[0]?.callId ?? "";
    await expect(runToolLoop(model, registry, [], { ...options, answers: { [callId]: true } })).resolves.toMatchObject({
      status: "awaiting-user",
      text: "Charged.",
    });
    await expect(runToolLoop(model, registry, [user("Thanks")], options)).resolves.toMatchObject({ text: "Bye." });
  });

  it("refuses a next turn without a message, or with decisions, and a one-turn loop ends done", async () => {
    const store = new MemoryCheckpointStore();
    const { model } = scripted([say("Hello."), say("Done.")]);
    const options = { runId: "w", checkpoints: store };
    await runToolLoop(model, new ToolRegistry(), [user("Hi")], { ...options, conversation: true });
    await expect(runToolLoop(model, new ToolRegistry(), [], options)).rejects.toThrow(
      /awaits the next user message: give it in messages/,
    );
    await expect(
      runToolLoop(model, new ToolRegistry(), [user("x")], { ...options, answers: { "1:x": true } }),
    ).rejects.toThrow(InvalidInput);
    await expect(
      runToolLoop(model, new ToolRegistry(), [user("Hi")], { runId: "once", checkpoints: store }),
    ).resolves.toMatchObject({ status: "done", turn: 1 });
    await expect(
      runToolLoop(model, new ToolRegistry(), [user("More")], { runId: "once", checkpoints: store }),
    ).rejects.toThrow(/ended \(done\)/);
  });

  it("ends a conversation for good with cancelToolLoop", async () => {
    const store = new MemoryCheckpointStore();
    const { model } = scripted([say("Hello.")]);
    await runToolLoop(model, new ToolRegistry(), [user("Hi")], {
      runId: "end",
      checkpoints: store,
      conversation: true,
    });
    await cancelToolLoop(model, new ToolRegistry(), "end", "the user closed the chat", { checkpoints: store });
    await expect(
      runToolLoop(model, new ToolRegistry(), [user("Hello?")], { runId: "end", checkpoints: store }),
    ).rejects.toThrow(/ended \(failed\)/);
  });
});
