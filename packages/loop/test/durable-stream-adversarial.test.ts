import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, pruneRuns, ToolRegistry, wakeRun } from "@durable/core";
import {
  cancelToolLoop,
  followToolLoop,
  type LoopFollowedPart,
  type LoopModel,
  type Message,
  type ModelReply,
  readToolLoop,
  recoverToolLoop,
  retryToolLoop,
  runToolLoop,
} from "../src/index.js";

const KEY = "k".repeat(32);
const ask = [{ role: "user" as const, content: "Book two seats" }];

async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

/** A model that streams each reply's text as one delta, then its tool calls, giving the replies in turn. */
function scripted(replies: readonly ModelReply[]): LoopModel {
  let calls = 0;
  return {
    async reply(_messages, _tools, options = {}) {
      const reply = replies[Math.min(calls++, replies.length - 1)] as ModelReply;
      options.onPart?.({ type: "text-delta", text: reply.text });
      for (const c of reply.toolCalls)
        options.onPart?.({ type: "tool-call", toolCallId: c.id, toolName: c.name, args: c.args });
      return reply;
    },
  };
}

/**
 * The promise of the stream: offsets 0, 1, 2, … each once, and its live
 * (not abandoned) parts say what the saved history says, once: the model's
 * text, each reply as saved, each tool result.
 */
function expectLiveIsSaved(parts: readonly LoopFollowedPart[], messages: readonly Message[], from = 0): void {
  expect(parts.map((p) => p.offset)).toEqual(parts.map((_, i) => from + i));
  const live = parts.filter((p) => !p.abandoned).map((p) => p.part);
  const said = messages.filter((m) => m.role === "assistant");
  const text = live.map((p) => (p.type === "text-delta" ? p.text : "")).join("");
  expect(text, "the live text").toBe(said.map((m) => m.content).join(""));
  expect(
    live.flatMap((p) => (p.type === "step-finish" ? [p.message] : [])),
    "the replies",
  ).toEqual(said);
  const results = messages.filter((m) => m.role === "tool");
  expect(
    live.flatMap((p) => (p.type === "tool-result" ? [p.message] : [])),
    "the tool results",
  ).toEqual(results);
}

const options = { checkpointKey: KEY, stream: { flushMs: 1 } };

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

  it("gives a round's tool results once when the round pauses for an approval and runs again on the resume", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const registry = new ToolRegistry()
      .tool("look", () => ({ seen: 1 }))
      .tool("pay", () => ({ paid: true }), { approval: true });
    const model = scripted([
      {
        text: "Looking, then paying. ",
        toolCalls: [
          { id: "a", name: "look", args: {} },
          { id: "b", name: "pay", args: {} },
        ],
      },
      { text: "Paid.", toolCalls: [] },
    ]);
    const store = { checkpoints, checkpointKey: KEY };
    const at = { ...options, checkpoints, runId: "approve" };
    const paused = await runToolLoop(model, registry, ask, at);
    if (paused.status !== "paused") throw new Error(`paused, not ${paused.status}`);
    // A client that reloads at the pause: the saved history, then the stream from its count.
    const saved = await readToolLoop("approve", store);
    const done = await runToolLoop(model, registry, [], {
      ...at,
      answers: Object.fromEntries(paused.approvals.map((a) => [a.callId, true])),
    });
    expect(done.status).toBe("done");
    const { messages } = await readToolLoop("approve", store);
    expectLiveIsSaved(await collect(followToolLoop("approve", store)), messages);
    const after = await collect(followToolLoop("approve", { ...store, from: saved.streamed ?? -1 }));
    expectLiveIsSaved(after, messages.slice(saved.messages.length), saved.streamed);
  });

  it("a reply a cancel cuts off, and one a failing provider cuts off, are abandoned: the live text is what was saved", async () => {
    const checkpoints = new MemoryCheckpointStore();
    let down = true;
    let release: (() => void) | undefined;
    const model: LoopModel = {
      async reply(messages, _tools, replyOptions = {}) {
        replyOptions.onPart?.({ type: "text-delta", text: "Half a rep" });
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (messages.at(-1)?.content === "cancel me") await new Promise<void>((resolve) => (release = resolve));
        if (down) throw new Error("the provider dropped the stream");
        replyOptions.onPart?.({ type: "text-delta", text: "ly." });
        return { text: "Half a reply.", toolCalls: [] };
      },
    };
    const registry = new ToolRegistry();
    const failed = await runToolLoop(model, registry, ask, { ...options, checkpoints, runId: "failed" }).catch(
      (e: unknown) => e,
    );
    expect(String(failed)).toMatch(/dropped the stream/);
    const failedParts = await collect(followToolLoop("failed", { ...options, checkpoints }));
    expectLiveIsSaved(failedParts, (await readToolLoop("failed", { ...options, checkpoints })).messages);
    down = false;
    await retryToolLoop(model, registry, "failed", { ...options, checkpoints });
    const retried = await collect(followToolLoop("failed", { ...options, checkpoints }));
    expectLiveIsSaved(retried, (await readToolLoop("failed", { ...options, checkpoints })).messages);
    const cut = runToolLoop(model, registry, [{ role: "user", content: "cancel me" }], {
      ...options,
      checkpoints,
      runId: "cancelled",
    }).catch((e: unknown) => e);
    // Cancelled once its half reply is in the store (attempt, step-start, the delta) and it waits mid-reply.
    const stored = async () => (await checkpoints.stream("cancelled")).reduce((n, batch) => n + batch.count, 0);
    for (let i = 0; i < 400 && (release === undefined || (await stored()) < 3); i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    await cancelToolLoop(model, registry, "cancelled", "the user pressed stop", { ...options, checkpoints });
    release?.();
    await cut;
    const cancelled = await collect(followToolLoop("cancelled", { ...options, checkpoints }));
    expect(cancelled.some((p) => p.abandoned && p.part.type === "text-delta")).toBe(true);
    expectLiveIsSaved(cancelled, (await readToolLoop("cancelled", { ...options, checkpoints })).messages);
  });

  it("data a tool writes after its call returned is not streamed: it is no longer that call's progress", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const registry = new ToolRegistry().tool("hold", (_args, ctx) => {
      ctx.writeData({ holding: true });
      setTimeout(() => ctx.writeData({ late: true }), 5);
      return { held: true };
    });
    const model = scripted([
      { text: "Holding. ", toolCalls: [{ id: "h", name: "hold", args: {} }] },
      { text: "Held.", toolCalls: [] },
    ]);
    const slow: LoopModel = {
      async reply(messages, tools, replyOptions) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return model.reply(messages, tools, replyOptions);
      },
    };
    await runToolLoop(slow, registry, ask, { ...options, checkpoints, runId: "late" });
    const parts = await collect(followToolLoop("late", { checkpoints, checkpointKey: KEY }));
    expect(parts.flatMap((p) => (p.part.type === "data" ? [p.part.data] : []))).toEqual([{ holding: true }]);
  });

  it("a follower ends when a conversation sleeps and when it waits for the user, and goes on from there after a wake and a next message", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const store = { checkpoints, checkpointKey: KEY };
    const model: LoopModel = {
      async reply(messages, _tools, replyOptions = {}) {
        const n = messages.filter((m) => m.role === "assistant").length;
        const text = ["Let me wait a minute. ", "Waited. ", "You are welcome."][n] ?? "";
        replyOptions.onPart?.({ type: "text-delta", text });
        return { text, toolCalls: n === 0 ? [{ id: "w", name: "wait", args: { seconds: 60 } }] : [] };
      },
    };
    const registry = new ToolRegistry();
    const at = { ...options, checkpoints, runId: "chat", conversation: true, sleepTool: "wait" };
    expect((await runToolLoop(model, registry, ask, at)).status).toBe("asleep");
    const asleep = await collect(followToolLoop("chat", store));
    await wakeRun("chat", { ...store, by: "ops" });
    const { runId: _runId, conversation: _conversation, ...recovering } = at;
    expect((await recoverToolLoop(model, registry, "chat", recovering)).status).toBe("awaiting-user");
    const awaiting = await collect(followToolLoop("chat", { ...store, from: asleep.length }));
    await runToolLoop(model, registry, [{ role: "user", content: "Thanks" }], at);
    const next = await collect(followToolLoop("chat", { ...store, from: asleep.length + awaiting.length }));
    const { messages, awaitingUser } = await readToolLoop("chat", store);
    expect(awaitingUser).toBe(true);
    expect(next.length).toBeGreaterThan(0);
    expectLiveIsSaved([...asleep, ...awaiting, ...next], messages);
    expect(await collect(followToolLoop("chat", store))).toEqual([...asleep, ...awaiting, ...next]);
  });

  it("a follower in the drive's process ends at once when the run sleeps, not a poll later", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const model = scripted([
      {
        text: "One moment. ",
        toolCalls: [
          { id: "s", name: "slow", args: {} },
          { id: "w", name: "wait", args: { seconds: 60 } },
        ],
      },
    ]);
    // The reply's parts land while the slow call runs: the save that puts the run to sleep brings none.
    const registry = new ToolRegistry().tool("slow", () => new Promise((resolve) => setTimeout(resolve, 50)));
    const at = { ...options, checkpoints, runId: "nap", sleepTool: "wait" };
    const running = runToolLoop(model, registry, ask, at);
    while ((await checkpoints.stream("nap")).length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    const started = performance.now();
    const parts = await collect(followToolLoop("nap", { checkpoints, checkpointKey: KEY, pollMs: 10_000 }));
    expect((await running).status).toBe("asleep");
    expect(performance.now() - started).toBeLessThan(2_000);
    expectLiveIsSaved(parts, (await readToolLoop("nap", { checkpoints, checkpointKey: KEY })).messages);
  });

  it("for any takeovers, failures and approvals mid-reply and mid-tool, live parts are the saved history, each once, and a fenced drive adds none", async () => {
    const words = fc.array(fc.constantFrom("Hold ", "two ", "seats ", "now. "), { minLength: 1, maxLength: 4 });
    const reply = fc.record({ words, approval: fc.boolean() });
    // A drive stops at its n-th event (a word it streams, a tool's write): stalled, then taken over, or failed.
    // With `land`, its parts so far land before the takeover; without, some may still be in memory or on their way.
    const cut = fc.record({ at: fc.nat({ max: 6 }), fail: fc.boolean(), land: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.array(reply, { minLength: 1, maxLength: 3 }),
        fc.array(cut, { maxLength: 4 }),
        fc.nat(),
        async (script, cuts, joinAt) => {
          const checkpoints = new MemoryCheckpointStore();
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          const drive = (cut: { at: number; fail: boolean; land: boolean } | undefined) => {
            let events = 0;
            let stalled!: () => void;
            const stall = new Promise<"stalled">((resolve) => (stalled = () => resolve("stalled")));
            const tick = async () => {
              if (events++ !== cut?.at) return;
              if (cut.fail) throw new Error("cut");
              stalled();
              await released;
            };
            const model: LoopModel = {
              async reply(messages, _tools, replyOptions = {}) {
                const n = messages.filter((m) => m.role === "assistant").length;
                const { words: said = [], approval = false } = script[n] ?? {};
                for (const word of said) {
                  replyOptions.onPart?.({ type: "text-delta", text: word });
                  await tick();
                }
                const calls = n >= script.length - 1 ? [] : [{ id: `h${n}`, name: "hold", args: { n } }];
                if (calls.length > 0 && approval) calls.push({ id: `p${n}`, name: "pay", args: { n } });
                return { text: said.join(""), toolCalls: calls };
              },
            };
            const registry = new ToolRegistry()
              .tool(
                "hold",
                async (args, ctx) => {
                  ctx.writeData({ holding: (args as { n: number }).n });
                  await tick();
                  return { held: (args as { n: number }).n };
                },
                { idempotent: true },
              )
              .tool("pay", () => ({ paid: true }), { approval: true, idempotent: true });
            return { model, registry, stall };
          };
          const settled: Promise<unknown>[] = [];
          let outcome: unknown;
          for (let i = 0; i < cuts.length + 8 && (outcome as { status?: string })?.status !== "done"; i++) {
            const { model, registry, stall } = drive(cuts[i]);
            const at = { ...options, checkpoints };
            const status = (outcome as { status?: string; approvals?: { callId: string }[] } | undefined) ?? {};
            const going =
              i === 0
                ? runToolLoop(model, registry, ask, { ...at, runId: "p" })
                : status.status === "paused"
                  ? runToolLoop(model, registry, [], {
                      ...at,
                      runId: "p",
                      answers: Object.fromEntries((status.approvals ?? []).map((a) => [a.callId, true])),
                    })
                  : (await checkpoints.latest("p")).status === "failed"
                    ? retryToolLoop(model, registry, "p", at)
                    : recoverToolLoop(model, registry, "p", { ...at, takeOver: true });
            settled.push(going.catch((e: unknown) => e));
            outcome = await Promise.race([going, stall]).catch((e: unknown) => e);
            if (cuts[i]?.land !== false) await new Promise((resolve) => setTimeout(resolve, 3));
          }
          expect((outcome as { status?: string }).status).toBe("done");
          release();
          await Promise.all(settled);
          const store = { checkpoints, checkpointKey: KEY };
          const { messages, streamed } = await readToolLoop("p", store);
          const parts = await collect(followToolLoop("p", store));
          expect(parts).toHaveLength(streamed ?? -1);
          expectLiveIsSaved(parts, messages);
          // A fenced drive appended nothing after the claim that fenced it: attempts only go up.
          const attempts = parts.map((p) => p.attempt);
          expect(attempts).toEqual([...attempts].sort((a, b) => a - b));
          const data = parts.filter((p) => !p.abandoned && p.part.type === "data").map((p) => p.part);
          expect(new Set(data.map((p) => JSON.stringify(p))).size).toBe(data.length);
          // A follower that joins anywhere gets the same parts from there on, marked alike.
          const from = joinAt % (parts.length + 1);
          expect(await collect(followToolLoop("p", { ...store, from }))).toEqual(parts.slice(from));
        },
      ),
      { numRuns: 50 },
    );
  });
});
