import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { followToolLoop, retryToolLoop, runToolLoop, type LoopModel } from "../src/index.js";

const KEY = "k".repeat(32);
const ask = [{ role: "user" as const, content: "Book two seats" }];

async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

describe("a loop's durable stream, attacked", () => {
  it("a model part that is not plain JSON fails the run with InvalidInput, and a retry goes on", async () => {
    const checkpoints = new MemoryCheckpointStore();
    let date = true;
    const model: LoopModel = {
      async reply(_messages, _tools, options = {}) {
        options.onPart?.({ type: "text-delta", text: "thinking " });
        options.onPart?.({ type: "tool-call", toolCallId: "x", toolName: "t", args: date ? new Date(0) : "ok" });
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { text: "thinking done", toolCalls: [] };
      },
    };
    const options = { checkpoints, checkpointKey: KEY, stream: { flushMs: 1 } };
    const error = await runToolLoop(model, new ToolRegistry(), ask, { ...options, runId: "nonjson" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidInput);
    expect(String(error)).toMatch(/a stream part\.args: a Date instance is not plain JSON/);
    expect((await checkpoints.latest("nonjson")).status).toBe("failed");
    date = false;
    const retried = await retryToolLoop(model, new ToolRegistry(), "nonjson", options);
    expect(retried.status).toBe("done");
    const parts = await collect(followToolLoop("nonjson", { checkpoints, checkpointKey: KEY }));
    expect(parts.map((p) => p.offset)).toEqual(parts.map((_, i) => i));
  });
});
