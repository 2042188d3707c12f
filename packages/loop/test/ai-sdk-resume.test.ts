import { setTimeout as sleep } from "node:timers/promises";
import { CheckpointNotFound, InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { DefaultChatTransport, readUIMessageStream, tool, UI_MESSAGE_STREAM_HEADERS, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  aiSdkModel,
  durableTools,
  followUIMessageStream,
  resumeStreamResponse,
  toUIMessageStream,
  type UIChunk,
} from "../src/ai-sdk.js";
import {
  followToolLoop,
  type LoopModel,
  type ModelReply,
  recoverToolLoop,
  runToolLoop,
  streamToolLoop,
} from "../src/index.js";
import { finish, streamedText, streaming, usage } from "./ai-mocks.js";

// A loop's stream followed from the store as the AI SDK's UI message stream (followUIMessageStream), and the
// route's answer that resumes it over SSE (resumeStreamResponse): ids, 204, from and Last-Event-ID, crashes.

const ask = [{ role: "user" as const, content: "Two seats" }];

const replies: ModelReply[] = [
  { text: "Let me hold them. ", toolCalls: [{ id: "c1", name: "hold_seats", args: { seats: 2 } }] },
  { text: "Two seats are held for you now.", toolCalls: [] },
];
const script = replies.map((reply) => reply.text).join("");

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

/**
 * A model that streams each reply word by word, a few ms apart (so a reply's words land in more than one of the
 * stream's batches: the deltas of one batch are one part); `hold` may stop call `call` after its second word.
 */
function wordModel(from: readonly ModelReply[], hold?: (call: number) => Promise<void>): LoopModel {
  let calls = 0;
  return {
    async reply(_messages, _tools, options = {}) {
      const call = ++calls;
      const reply = from[Math.min(call - 1, from.length - 1)] as ModelReply;
      for (const [i, word] of reply.text.split(/(?<= )/).entries()) {
        options.onPart?.({ type: "text-delta", text: word });
        if (i === 1) await hold?.(call);
        await sleep(3);
      }
      for (const c of reply.toolCalls)
        options.onPart?.({ type: "tool-call", toolCallId: c.id, toolName: c.name, args: c.args });
      return reply;
    },
  };
}

/** A run "r" done on a fresh memory store, its stream written. */
async function doneRun() {
  const checkpoints = new MemoryCheckpointStore();
  const result = await runToolLoop(wordModel(replies), registry(), ask, {
    checkpoints,
    runId: "r",
    stream: { flushMs: 1 },
  });
  expect(result.status).toBe("done");
  return checkpoints;
}

/**
 * A run "r" whose first drive stopped two words into its second reply and was taken over: its stream has a void
 * range. `before` is what a client following it got until then, when it dropped its connection.
 */
async function crashedRun() {
  const checkpoints = new MemoryCheckpointStore();
  let release!: () => void;
  const stuck = new Promise<void>((resolve) => (release = resolve));
  const options = { checkpoints, stream: { flushMs: 1 } };
  const first = runToolLoop(
    wordModel(replies, (call) => (call === 2 ? stuck : Promise.resolve())),
    registry(),
    ask,
    { ...options, runId: "r" },
  ).catch((error: unknown) => error);
  await until(async () => (await checkpoints.stream("r")).length > 0);
  const before = await readSse(await resumeStreamResponse("r", options), (parts) =>
    textOf(allChunks(parts)).endsWith("Two seats "),
  );
  const recovered = await recoverToolLoop(wordModel(replies.slice(1)), registry(), "r", { ...options, takeOver: true });
  expect(recovered.status).toBe("done");
  release();
  expect(await first).toBeInstanceOf(Error);
  // The void range: the second reply's parts, from its step-start to the recovery's attempt.
  const all = await collect(followToolLoop("r", { checkpoints }));
  const steps = all.filter((p) => p.part.type === "step-start").map((p) => p.offset);
  const attempts = all.filter((p) => p.part.type === "attempt").map((p) => p.offset);
  expect(attempts).toHaveLength(2);
  return { checkpoints, before, abandons: { from: steps[1] as number, to: attempts[1] as number } };
}

async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const part of parts) all.push(part);
  return all;
}

/** One part's events in an SSE body: its offset (the last event's `id`) and its chunks. */
interface SsePart {
  readonly id: number | undefined;
  readonly chunks: UIChunk[];
}

/**
 * Reads an SSE body into parts as a client keeps them (events up to one with an `id` are that part's), until it
 * ends, or until `enough` holds for the parts so far: the client drops the connection then.
 */
async function readSse(
  response: Response,
  enough?: (parts: readonly SsePart[]) => boolean,
): Promise<{ parts: SsePart[]; done: boolean; body: string }> {
  const parts: SsePart[] = [];
  let chunks: UIChunk[] = [];
  let done = false;
  let body = "";
  let buffer = "";
  const decoder = new TextDecoder();
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    const text = decoder.decode(next.value, { stream: true });
    body += text;
    const events = (buffer + text).split("\n\n");
    buffer = events.pop() ?? "";
    for (const event of events) {
      let id: number | undefined;
      for (const line of event.split("\n")) {
        if (line.startsWith("id: ")) id = Number(line.slice(4));
        else if (line === "data: [DONE]") done = true;
        else if (line.startsWith("data: ")) chunks.push(JSON.parse(line.slice(6)) as UIChunk);
        else throw new Error(`an SSE line the stream should not give: ${line}`);
      }
      if (id !== undefined) {
        parts.push({ id, chunks });
        chunks = [];
      }
    }
    if (enough?.(parts) === true) {
      await reader.cancel();
      return { parts, done, body };
    }
  }
  if (chunks.length > 0) parts.push({ id: undefined, chunks });
  return { parts, done, body };
}

const sse = (response: Response) => readSse(response);

const textOf = (chunks: readonly UIChunk[]) =>
  chunks.map((chunk) => (chunk.type === "text-delta" ? chunk.delta : "")).join("");
const allChunks = (parts: readonly SsePart[]) => parts.flatMap((part) => part.chunks);

/** The chunks with each run of text (or reasoning) deltas of one id as one delta. */
function mergeDeltas(chunks: readonly UIChunk[]): UIChunk[] {
  const merged: UIChunk[] = [];
  for (const chunk of chunks) {
    const last = merged.at(-1);
    if (
      (chunk.type === "text-delta" || chunk.type === "reasoning-delta") &&
      last?.type === chunk.type &&
      last.id === chunk.id
    )
      merged[merged.length - 1] = { ...last, delta: last.delta + chunk.delta };
    else merged.push(chunk);
  }
  return merged;
}

describe("a loop's stream followed as the AI SDK's UI message stream (followUIMessageStream)", () => {
  it("gives the chunks toUIMessageStream gives in process for the same run, a data-durable part per attempt", async () => {
    const checkpoints = new MemoryCheckpointStore();
    const { model } = streaming([
      [
        { type: "stream-start", warnings: [] },
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "Two." },
        { type: "reasoning-end", id: "r" },
        { type: "tool-call", toolCallId: "c1", toolName: "hold_seats", input: '{"seats":2}' },
        { type: "finish", finishReason: finish("tool-calls"), usage: usage(5, 2) },
      ],
      streamedText("Two ", "seats ", "held."),
    ]);
    const tools = {
      hold_seats: tool({
        inputSchema: z.object({ seats: z.number() }),
        execute: async ({ seats }) => ({ held: seats }),
      }),
    };
    const stream = streamToolLoop(aiSdkModel(model), durableTools(tools), ask, {
      checkpoints,
      runId: "s",
      stream: { flushMs: 1 },
    });
    const inProcess = await collect(toUIMessageStream(stream));
    const followed = await collect(followUIMessageStream("s", followToolLoop("s", { checkpoints })));
    // The store keeps the deltas of one batch as one part: the same text and reasoning, in fewer deltas.
    expect(mergeDeltas(followed)).toEqual(
      mergeDeltas(inProcess).map((chunk) =>
        chunk.type === "data-durable" ? { ...chunk, data: { runId: "s", recovered: false, attempt: 0 } } : chunk,
      ),
    );
    expect(textOf(followed)).toBe("Two seats held.");
  });

  it("drops the parts a cut-off drive wrote, and says with the recovery's data-durable part which offsets are void", async () => {
    const { checkpoints, abandons } = await crashedRun();
    const parts = await collect(followToolLoop("r", { checkpoints }));
    const voided = parts.filter((p) => p.abandoned);
    expect(voided.map((p) => p.offset)).toEqual(
      [...Array(abandons.to - abandons.from).keys()].map((i) => abandons.from + i),
    );
    expect(voided.map((p) => (p.part.type === "text-delta" ? p.part.text : "")).join("")).toBe("Two seats ");
    const chunks = await collect(followUIMessageStream("r", followToolLoop("r", { checkpoints })));
    expect(chunks.filter((chunk) => chunk.type === "data-durable").map((chunk) => chunk.data)).toEqual([
      { runId: "r", recovered: false, attempt: 0 },
      { runId: "r", recovered: true, attempt: 1, abandons },
    ]);
    // Each text once: the cut-off reply's two words are not given, the recovery's whole reply is.
    expect(textOf(chunks)).toBe(script);
    expect(chunks.filter((chunk) => chunk.type === "start-step")).toHaveLength(2);
    expect(chunks.filter((chunk) => chunk.type === "data-tool")).toEqual([
      { type: "data-tool", data: { callId: expect.stringContaining("c1"), data: { holding: 2 } } },
    ]);
    expect(chunks.at(-1)).toEqual({ type: "finish" });
  });
});

describe("a route's answer that resumes a loop's stream (resumeStreamResponse)", () => {
  it("is SSE in the UI message stream format, each part's last event with its offset as id, every offset once", async () => {
    const checkpoints = await doneRun();
    const response = await resumeStreamResponse("r", { checkpoints });
    expect(response.status).toBe(200);
    for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADERS))
      expect(response.headers.get(name)).toBe(value);
    const { parts, done, body } = await sse(response);
    const length = (await collect(followToolLoop("r", { checkpoints }))).length;
    expect(parts.map((part) => part.id)).toEqual([...Array(length).keys(), undefined]);
    expect(done).toBe(true);
    expect(body.startsWith('data: {"type":"start"}\n\nid: 0\ndata: {"type":"data-durable"')).toBe(true);
    expect(body.endsWith('data: {"type":"finish"}\n\ndata: [DONE]\n\n')).toBe(true);
    expect(parts[0]?.chunks).toEqual([
      { type: "start" },
      { type: "data-durable", data: { runId: "r", recovered: false, attempt: 0 } },
    ]);
    expect(textOf(allChunks(parts))).toBe(script);
  });

  it("resumes after Last-Event-ID, or from `from`; a resume in the middle of a text opens a text part", async () => {
    const checkpoints = await doneRun();
    const all = await collect(followToolLoop("r", { checkpoints }));
    // The first part that goes on with a text the part before it began.
    const middle = all.findIndex((p, i) => p.part.type === "text-delta" && all[i - 1]?.part.type === "text-delta");
    expect(middle).toBeGreaterThan(0);
    const said = (parts: typeof all) => parts.map((p) => (p.part.type === "text-delta" ? p.part.text : "")).join("");
    const fromMiddle = await sse(await resumeStreamResponse("r", { checkpoints, from: middle }));
    expect(fromMiddle.parts[0]?.id).toBe(middle);
    expect(fromMiddle.parts[0]?.chunks).toEqual([
      { type: "start" },
      { type: "text-start", id: "text-1" },
      { type: "text-delta", id: "text-1", delta: said([all[middle]!]) },
    ]);
    expect(allChunks(fromMiddle.parts).some((chunk) => chunk.type === "start-step")).toBe(true); // the next step's
    // The step's end closes the text and repeats nothing the client got before `middle`.
    expect(textOf(allChunks(fromMiddle.parts))).toBe(script.slice(said(all.slice(0, middle)).length));
    expect(allChunks(fromMiddle.parts).filter((chunk) => chunk.type === "tool-input-available")).toHaveLength(1);
    // Last-Event-ID wins over `from` (an EventSource reconnects to the URL it first opened).
    const afterLast = await sse(
      await resumeStreamResponse("r", { checkpoints, from: 0, lastEventId: String(middle - 1) }),
    );
    expect(afterLast.body).toBe(fromMiddle.body);
    // An empty header is none.
    expect((await sse(await resumeStreamResponse("r", { checkpoints, from: middle, lastEventId: "" }))).body).toBe(
      fromMiddle.body,
    );
  });

  it("answers 204 with no body when the run has nothing more to stream; refuses a Last-Event-ID that is no offset, and an unknown run", async () => {
    const checkpoints = await doneRun();
    const length = (await collect(followToolLoop("r", { checkpoints }))).length;
    for (const options of [
      { from: length },
      { lastEventId: String(length - 1) },
      { from: 5, lastEventId: String(length + 3) },
    ]) {
      const response = await resumeStreamResponse("r", { checkpoints, ...options, headers: { "x-chat": "r" } });
      expect(response.status).toBe(204);
      expect(response.headers.get("x-chat")).toBe("r");
      expect(await response.text()).toBe("");
    }
    for (const lastEventId of ["-1", "1.5", "abc", "9".repeat(20)])
      await expect(resumeStreamResponse("r", { checkpoints, lastEventId })).rejects.toThrow(InvalidInput);
    await expect(resumeStreamResponse("r", { checkpoints, from: -1 })).rejects.toThrow(InvalidInput);
    await expect(resumeStreamResponse("nobody", { checkpoints })).rejects.toThrow(CheckpointNotFound);
  });

  it("after a takeover, a client that got the cut-off drive's parts learns from the resumed stream to remove them", async () => {
    const { checkpoints, before, abandons } = await crashedRun();
    // The client got every part up to the cut, the last ones from the drive cut off, then dropped its connection.
    const last = abandons.to - 1;
    expect(before.parts.map((part) => part.id)).toEqual([...Array(last + 1).keys()]);
    expect(before.done).toBe(false);
    const resumed = await sse(await resumeStreamResponse("r", { checkpoints, lastEventId: String(last) }));
    expect(resumed.parts[0]?.id).toBe(last + 1);
    const ids = [...before.parts, ...resumed.parts].flatMap((part) => (part.id === undefined ? [] : [part.id]));
    expect(ids).toEqual([...Array(ids.length).keys()]);
    const recovery = allChunks(resumed.parts).find((chunk) => chunk.type === "data-durable");
    expect(recovery).toEqual({ type: "data-durable", data: { runId: "r", recovered: true, attempt: 1, abandons } });
    // What the client shows once it removed the void offsets: each reply once.
    const kept = [...before.parts, ...resumed.parts].filter(
      (part) => part.id === undefined || part.id < abandons.from || part.id >= abandons.to,
    );
    expect(textOf(allChunks(before.parts))).toBe(`${replies[0]?.text}Two seats `);
    expect(textOf(allChunks(kept))).toBe(script);
  });

  it("is read by the AI SDK's own chat transport (useChat's resume) into the reply", async () => {
    const checkpoints = await doneRun();
    const requests: string[] = [];
    const transport = new DefaultChatTransport<UIMessage>({
      api: "http://example.test/chats",
      fetch: async (url) => {
        requests.push(String(url));
        return resumeStreamResponse("r", { checkpoints });
      },
    });
    const stream = await transport.reconnectToStream({ chatId: "r" });
    expect(requests).toEqual(["http://example.test/chats/r/stream"]);
    let message: UIMessage | undefined;
    for await (const snapshot of readUIMessageStream({ stream: stream! })) message = snapshot;
    const texts = message?.parts.flatMap((part) => (part.type === "text" ? [part.text] : []));
    expect(texts?.join("")).toBe(script);
    expect(message?.parts.some((part) => part.type === "tool-hold_seats" || part.type === "dynamic-tool")).toBe(true);
  });
});
