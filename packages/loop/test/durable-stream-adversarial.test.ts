import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, pruneRuns, ToolRegistry } from "@durable/core";
import {
  cancelToolLoop,
  followToolLoop,
  retryToolLoop,
  runToolLoop,
  type LoopModel,
  type ModelReply,
} from "../src/index.js";

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

  it("pruneRuns with streamsOnly keeps the stream of a failed run a retry may take up, and the retry goes on", async () => {
    const checkpoints = new MemoryCheckpointStore();
    let down = true;
    const model: LoopModel = {
      async reply(_messages, _tools, options = {}) {
        options.onPart?.({ type: "text-delta", text: "Hel" });
        if (down) throw new Error("provider down");
        options.onPart?.({ type: "text-delta", text: "lo" });
        return { text: "Hello", toolCalls: [] } satisfies ModelReply;
      },
    };
    const options = { checkpoints, checkpointKey: KEY, stream: true };
    const registry = new ToolRegistry();
    await runToolLoop(model, registry, ask, { ...options, runId: "failed" }).catch(() => undefined);
    expect((await checkpoints.latest("failed")).status).toBe("failed");
    // A cancelled run does not go on, and one done neither: their streams go.
    down = false;
    await runToolLoop(model, registry, ask, { ...options, runId: "done" });
    const holding = runToolLoop(
      {
        async reply(_messages, _tools, replyOptions = {}) {
          replyOptions.onPart?.({ type: "text-delta", text: "…" });
          await new Promise((resolve) => setTimeout(resolve, 30));
          return { text: "never", toolCalls: [] };
        },
      },
      registry,
      ask,
      { ...options, runId: "cancelled" },
    ).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await cancelToolLoop(model, registry, "cancelled", "stop", options);
    await holding;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const pruned = await pruneRuns({ checkpoints, checkpointKey: KEY, olderThan: Date.now(), streamsOnly: true });
    expect([...pruned.pruned].sort()).toEqual(["cancelled", "done"]);
    expect(await checkpoints.stream("failed")).not.toEqual([]);
    const retried = await retryToolLoop(model, registry, "failed", options);
    expect(retried.status).toBe("done");
  });
});
