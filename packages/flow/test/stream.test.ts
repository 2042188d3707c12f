import {
  Executor,
  followRun,
  type FollowedPart,
  InvalidInput,
  MemoryCheckpointStore,
  ToolRegistry,
} from "@durable/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FlowRunner, workflow } from "../src/index.js";
import { KEY } from "./helpers.js";

describe("a flow's stream", () => {
  it("holds what its tools write (ctx.writeData), each part once, with its call id; a replayed call writes nothing again", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool("copy", async (args: { files: number }, ctx) => {
      for (let i = 1; i <= args.files; i++) ctx.writeData({ copied: i, of: args.files });
      return args.files;
    });
    const runner = new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY, stream: true });
    const wf = workflow("backup", { input: z.object({ files: z.number() }) }, async (ctx, { files }) => ({
      copied: await ctx.call<number>("copy", { files }),
    }));
    const done = await runner.run(wf, { files: 3 }, { runId: "b1" });
    expect(done.status).toBe("done");
    const parts: FollowedPart[] = [];
    for await (const part of followRun({ checkpoints, checkpointKey: KEY, runId: "b1" })) parts.push(part);
    expect(parts.map((p) => p.part.type)).toEqual(["attempt", "data", "data", "data"]);
    expect(parts.slice(1).map((p) => p.part["data"])).toEqual([1, 2, 3].map((copied) => ({ copied, of: 3 })));
    expect(new Set(parts.slice(1).map((p) => p.part["callId"])).size).toBe(1);
  });

  it("refuses data that is not plain JSON with InvalidInput, and a runner without stream writes none", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const seen: unknown[] = [];
    const registry = new ToolRegistry().tool("bad", async (_args: unknown, ctx) => {
      try {
        ctx.writeData({ at: new Date() });
      } catch (error) {
        seen.push(error);
      }
      ctx.writeData({ fine: true });
      return "ok";
    });
    const wf = workflow("bad", { input: z.object({}) }, async (ctx) => ({ out: await ctx.call<string>("bad", {}) }));
    const quiet = new FlowRunner(new Executor(registry), { checkpoints, checkpointKey: KEY });
    expect((await quiet.run(wf, {}, { runId: "q" })).status).toBe("done");
    expect(seen[0]).toBeInstanceOf(InvalidInput);
    expect(await checkpoints.stream("q")).toEqual([]);
  });
});
