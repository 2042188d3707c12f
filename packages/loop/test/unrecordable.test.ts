import { describe, expect, it } from "vitest";
import {
  InvalidInput,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  ToolRegistry,
  UnrecordableResult,
  type ValueCodec,
} from "@durable/core";
import { DyingStore, settle } from "@durable/test-utils/stores";
import { recoverToolLoop, runToolLoop, type LoopModel } from "../src/index.js";

describe("a tool result that cannot be stored", () => {
  it("is UnrecordableResult (not InvalidInput): the loop is left running with the call in doubt, for recovery to decide", async () => {
    let calls = 0;
    const model: LoopModel = {
      reply: async () =>
        calls++ === 0
          ? { text: "", toolCalls: [{ id: "a", name: "send", args: {} }] }
          : { text: "sent", toolCalls: [] },
    };
    let sent = 0;
    const registry = new ToolRegistry().tool("send", () => ({ sent: ++sent, at: new Date() }));
    const store = new MemoryCheckpointStore();
    const error: unknown = await runToolLoop(model, registry, [{ role: "user", content: "send it" }], {
      runId: "chat",
      checkpoints: store,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnrecordableResult);
    expect(error).not.toBeInstanceOf(InvalidInput);
    expect(error).toMatchObject({ code: "UNRECORDABLE_RESULT", tool: "send" });
    expect((await store.latest("chat")).status).toBe("running");
    const recovery: unknown = await recoverToolLoop(model, registry, "chat", { checkpoints: store }).catch(
      (e: unknown) => e,
    );
    expect(recovery).toBeInstanceOf(RecoveryNeedsDecision);
    expect((recovery as RecoveryNeedsDecision).calls).toMatchObject([
      { tool: "send", why: "result could not be recorded" },
    ]);
    expect(sent).toBe(1);
  });
});

describe("a tool result kept by a codec", () => {
  /** Dates as `{ $date: iso }`: the smallest codec a user might write. */
  const dates: ValueCodec = {
    encode: (value) =>
      JSON.parse(
        JSON.stringify(value, function (this: Record<string, unknown>, key, json) {
          const raw = this[key];
          return raw instanceof Date ? { $date: raw.toISOString() } : json;
        }),
      ),
    decode: (json) =>
      JSON.parse(JSON.stringify(json), (_key, value) =>
        typeof value?.$date === "string" ? new Date(value.$date) : value,
      ),
  };
  const AT = new Date("2026-12-04T10:00:00.000Z");
  const KEY = "loop-codec-test-key-0123456789abcdef";

  it("is stored, and the model gets the decoded result as JSON text, the same when it replays after a crash", async () => {
    const told: string[] = [];
    const model: LoopModel = {
      reply: async (messages) => {
        const result = messages.find((m) => m.role === "tool");
        if (result === undefined) return { text: "", toolCalls: [{ id: "a", name: "send", args: {} }] };
        told.push(result.content);
        return { text: "sent", toolCalls: [] };
      },
    };
    let sent = 0;
    const registry = new ToolRegistry().tool("send", () => ({ sent: ++sent, at: AT }));
    const store = new MemoryCheckpointStore();
    // The worker dies after send's result is recorded, before the checkpoint that holds it.
    const dying = new DyingStore(store, { op: "save", step: 2, when: "before" });
    void runToolLoop(model, registry, [{ role: "user", content: "send it" }], {
      runId: "chat",
      checkpoints: dying,
      checkpointKey: KEY,
      codec: dates,
    });
    await settle();
    expect(sent).toBe(1);
    const result = await recoverToolLoop(model, registry, "chat", {
      checkpoints: store,
      checkpointKey: KEY,
      codec: dates,
    });
    expect(result).toMatchObject({ status: "done", text: "sent" });
    expect(sent).toBe(1);
    // Keys in canonical order, as the record keeps them.
    expect(told).toEqual([JSON.stringify({ at: AT, sent: 1 })]);
  });
});
