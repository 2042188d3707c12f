import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, RecoveryNeedsDecision, ToolRegistry } from "@durable/core";
import { recoverToolLoop, runToolLoop, type LoopModel, type ModelReply } from "../src/index.js";
import { DyingStore, forever, settle } from "@durable/test-utils/stores";

const KEY = "loop-tests-key-0123456789abcdef-xyz";

describe("a model reply with two identical tool calls under one tool-call id", () => {
  it("runs each once: after a crash between them the finished one replays and only the other is in doubt", async () => {
    const store = new MemoryCheckpointStore();
    let replies = 0;
    const model: LoopModel = {
      async reply(): Promise<ModelReply> {
        return replies++ === 0
          ? {
              text: "",
              toolCalls: [
                { id: "dup", name: "charge", args: { cents: 500 } },
                { id: "dup", name: "charge", args: { cents: 500 } },
              ],
            }
          : { text: "done", toolCalls: [] };
      },
    };
    let charges = 0;
    let hangSecond = true;
    const registry = new ToolRegistry().tool("charge", async () => {
      charges++;
      if (hangSecond && charges === 2) await forever(); // the worker dies inside the second charge
      return `charge ${charges}`;
    });
    // The first worker on a connection of its own, as another process would be.
    const through = new DyingStore(store, undefined);
    void runToolLoop(model, registry, [{ role: "user", content: "pay twice" }], {
      runId: "dup",
      checkpoints: through,
      checkpointKey: KEY,
    });
    await settle();
    await through.die();
    expect(charges).toBe(2);
    hangSecond = false;
    const options = { checkpoints: store, checkpointKey: KEY };
    const error = await recoverToolLoop(model, registry, "dup", options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecoveryNeedsDecision);
    expect((error as RecoveryNeedsDecision).calls).toMatchObject([{ tool: "charge", why: "started with no result" }]);
    const result = await recoverToolLoop(model, registry, "dup", { ...options, rerunInDoubt: true });
    expect(result).toMatchObject({ status: "done", text: "done" });
    expect(charges).toBe(3); // two on the first worker, the one in doubt once more
    const tools =
      result.status === "done" ? result.messages.filter((m) => m.role === "tool").map((m) => m.content) : [];
    expect(tools.sort()).toEqual(["charge 1", "charge 3"]);
  });
});
