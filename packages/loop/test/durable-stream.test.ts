import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import {
  followToolLoop,
  readToolLoop,
  recoverToolLoop,
  runToolLoop,
  type LoopFollowedPart,
  type LoopModel,
  type ModelReply,
  type ReplyOptions,
} from "../src/index.js";

const ask = [{ role: "user" as const, content: "Book two seats" }];

function registry(): ToolRegistry {
  return new ToolRegistry().tool(
    "hold_seats",
    (args, ctx) => {
      ctx.writeData({ holding: (args as { seats: number }).seats });
      return { held: (args as { seats: number }).seats };
    },
    { idempotent: true },
  );
}

/** A model that streams each reply's text word by word; `hold` lets a test stop a call mid-reply. */
function wordModel(replies: readonly ModelReply[], hold?: (call: number, options: ReplyOptions) => Promise<void>) {
  let calls = 0;
  const model: LoopModel = {
    async reply(_messages, _tools, options = {}) {
      const call = ++calls;
      const reply = replies[Math.min(call - 1, replies.length - 1)] as ModelReply;
      const words = reply.text.split(/(?<= )/);
      for (const [i, word] of words.entries()) {
        options.onPart?.({ type: "text-delta", text: word });
        if (i === 1) await hold?.(call, options);
      }
      for (const c of reply.toolCalls)
        options.onPart?.({ type: "tool-call", toolCallId: c.id, toolName: c.name, args: c.args });
      return reply;
    },
  };
  return { model, calls: () => calls };
}

const replies: ModelReply[] = [
  { text: "Let me hold them. ", toolCalls: [{ id: "c1", name: "hold_seats", args: { seats: 2 } }] },
  { text: "Two seats are held for you now.", toolCalls: [] },
];

async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

const kinds = (parts: readonly LoopFollowedPart[]) =>
  parts.map((p) => p.part.type).filter((type, i, all) => type !== "text-delta" || all[i - 1] !== "text-delta");
const live = (parts: readonly LoopFollowedPart[]) => parts.filter((p) => !p.abandoned);
const text = (parts: readonly LoopFollowedPart[]) =>
  parts.map((p) => (p.part.type === "text-delta" ? p.part.text : "")).join("");

describe("a loop's durable stream", () => {
  it("is followed from another reader while the loop runs: every part once, in order, ending when the run ends", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const options = { checkpoints, runId: "s1", stream: { flushMs: 5 } };
    const running = runToolLoop(wordModel(replies).model, registry(), ask, options);
    await until(async () => (await checkpoints.stream("s1")).length > 0);
    const parts = await collect(followToolLoop("s1", { checkpoints, pollMs: 5 }));
    expect((await running).status).toBe("done");
    expect(parts.map((p) => p.offset)).toEqual(parts.map((_, i) => i));
    // A model's deltas of one batch are one part: the kinds in order, with the deltas of a reply counted once.
    expect(kinds(parts)).toEqual([
      "attempt",
      "step-start",
      "text-delta",
      "tool-call",
      "step-finish",
      "data",
      "tool-result",
      "step-start",
      "text-delta",
      "step-finish",
    ]);
    expect(parts.every((p) => p.attempt === 0 && !p.abandoned)).toBe(true);
    expect(parts.find((p) => p.part.type === "data")?.part).toMatchObject({ data: { holding: 2 } });
    expect(text(parts)).toBe(replies.map((r) => r.text).join(""));
    const snapshot = await readToolLoop("s1", { checkpoints });
    expect(snapshot.streamed).toBe(parts.length);
  });

  it("marks the parts of a drive cut off mid-reply, and the recovery's attempt streams the reply again: each live part once", async () => {
    const checkpoints = new MemoryCheckpointStore();
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    // Worker A stops after two words of its second reply, holding a lease that is then taken over.
    let holding = false;
    const a = wordModel(replies, async (call) => {
      if (call !== 2) return;
      holding = true;
      await stuck;
    });
    const options = { checkpoints, stream: { flushMs: 1 } };
    const first = runToolLoop(a.model, registry(), ask, { ...options, runId: "s2" }).catch((error: unknown) => error);
    await until(async () => holding);
    // Its two words are flushed (every ms) before worker B takes over.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const b = wordModel(replies.slice(1));
    const recovered = await recoverToolLoop(b.model, registry(), "s2", { ...options, takeOver: true });
    expect(recovered.status).toBe("done");
    release();
    expect(await first).toBeInstanceOf(Error);
    const parts = await collect(followToolLoop("s2", { checkpoints }));
    const attempts = parts.filter((p) => p.part.type === "attempt");
    const cut = parts.filter((p) => p.abandoned);
    expect(attempts.map((p) => p.part)).toEqual([
      { type: "attempt", attempt: 0 },
      { type: "attempt", attempt: 1, abandons: { from: cut[0]?.offset, to: attempts[1]?.offset } },
    ]);
    expect(cut.map((p) => p.offset)).toEqual(cut.map((_, i) => (cut[0]?.offset ?? 0) + i));
    expect(cut.every((p) => p.attempt === 0)).toBe(true);
    // What worker A streamed of the reply it never saved: its first two words.
    expect(text(cut)).toBe("Two seats ");
    expect(text(live(parts))).toBe(replies.map((r) => r.text).join(""));
    // A follower that joins at the saved history's end gets what came after it only.
    const snapshot = await readToolLoop("s2", { checkpoints });
    expect(await collect(followToolLoop("s2", { checkpoints, from: snapshot.streamed ?? -1 }))).toEqual([]);
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("never came");
}
