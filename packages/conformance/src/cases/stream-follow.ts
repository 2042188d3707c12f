import { ToolRegistry } from "@durable/core";
import {
  followToolLoop,
  type LoopFollowedPart,
  type LoopModel,
  type ModelReply,
  recoverToolLoop,
  runToolLoop,
} from "@durable/loop";
import { expect } from "vitest";
import { KIT_KEY } from "../harness/harness.js";
import type { ConformanceCase } from "./case.js";
import { breaks } from "./rule.js";

const REPLIES: readonly ModelReply[] = [
  { text: "Holding two seats. ", toolCalls: [{ id: "c1", name: "hold_seats", args: { seats: 2 } }] },
  { text: "Both seats are held for you until noon.", toolCalls: [] },
];

/** What the model really said, word by word, per drive: the verdict is judged against it, not against the store. */
type Said = string[];

/** A model streaming each reply word by word into `said`; a drive given `stall` stops inside its second reply until released. */
function model(said: Said, replies: readonly ModelReply[], stall?: Promise<void>): LoopModel {
  let calls = 0;
  return {
    async reply(_messages, _tools, options = {}) {
      calls += 1;
      const reply = replies[calls - 1] as ModelReply;
      for (const [i, word] of reply.text.split(/(?<= )/).entries()) {
        said.push(word);
        options.onPart?.({ type: "text-delta", text: word });
        if (i === 2 && calls === 2 && stall !== undefined) await stall;
      }
      return reply;
    },
  };
}

function tools(): ToolRegistry {
  return new ToolRegistry().tool("hold_seats", (args) => ({ held: (args as { seats: number }).seats }), {
    idempotent: true,
  });
}

async function partsOf(parts: AsyncIterable<LoopFollowedPart>): Promise<LoopFollowedPart[]> {
  const all: LoopFollowedPart[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

const rule = (operation: string, expected: string) => breaks("streams", operation, expected);

export const followCase: ConformanceCase = {
  name: "a loop taken over mid-reply by a worker of another client: a follower gets every part once, in order, the cut-off attempt's parts marked, and the live text is what the model said last",
  timeout: 60_000,
  async run(h) {
    const runId = h.runId("follow");
    const other = h.init.capabilities?.connect === undefined ? h.store : await h.connect();
    let release!: () => void;
    const stall = new Promise<void>((resolve) => (release = resolve));
    const saidA: Said = [];
    const saidB: Said = [];
    const options = { checkpointKey: KIT_KEY, stream: { flushMs: 1 }, lease: { ms: 60_000 } };
    const first = runToolLoop(model(saidA, REPLIES, stall), tools(), [{ role: "user", content: "Two seats" }], {
      ...options,
      checkpoints: h.store,
      runId,
    }).catch((error: unknown) => error);
    // Worker A has streamed three words of its second reply, and stays there.
    for (let i = 0; i < 1_000 && saidA.length < REPLIES[0]!.text.split(" ").length + 2; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const saidBeforeTakeover = saidA.length;
    const b = await recoverToolLoop(model(saidB, REPLIES.slice(1)), tools(), runId, {
      ...options,
      checkpoints: other,
      takeOver: true,
    });
    expect(b.status, rule("recoverToolLoop with takeOver on another client", "the run done")).toBe("done");
    release();
    await first;
    const parts = await partsOf(followToolLoop(runId, { checkpoints: h.store, checkpointKey: KIT_KEY }));
    expect(
      parts.map((p) => p.offset),
      rule("followToolLoop(runId) of the whole stream", "offsets 0, 1, 2, … each once"),
    ).toEqual(parts.map((_, i) => i));
    const abandoned = parts.filter((p) => p.abandoned);
    // What worker A said of its second reply before it was cut off: a store that let its later parts in would show more.
    const cut = saidA.slice(REPLIES[0]!.text.split(/(?<= )/).length, saidBeforeTakeover);
    expect(
      abandoned
        .filter((p) => p.part.type === "text-delta")
        .map((p) => (p.part as { text: string }).text)
        .join(""),
      rule("the text worker A streamed of the reply it never saved", "all of it marked abandoned, of attempt 0"),
    ).toBe(cut.join(""));
    expect(
      abandoned.every((p) => p.attempt === 0),
      rule("abandoned parts", "of attempt 0"),
    ).toBe(true);
    const live = parts
      .filter((p) => !p.abandoned && p.part.type === "text-delta")
      .map((p) => (p.part as { text: string }).text)
      .join("");
    expect(live, rule("the live text of the stream", "what the model said in the saved replies, once")).toBe(
      REPLIES.map((reply) => reply.text).join(""),
    );
    expect(saidB.join(""), rule("worker B's reply", "the second reply, made again")).toBe(REPLIES[1]!.text);
  },
};
