import { describe, expect, it } from "vitest";
import {
  InvalidInput,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  ToolRegistry,
  UnrecordableResult,
} from "@durable/core";
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
