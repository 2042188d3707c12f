import { describe, expect, it } from "vitest";
import { CHAT_REPLY_TEXT, CHAT_SCRIPT } from "../src/chat-model.js";
import { examples, post, until } from "./example.js";
import { type SsePart, sseParts, textOf } from "./sse.js";

// The chat's routes through a server process, a worker process driving the chats: POST /chats, GET /chats/:id and
// the SSE route GET /chats/:id/stream (each part's offset its event id, `from`, Last-Event-ID, 204).

const example = examples();

/** Reads the chat's stream to its end from `from` (or after `lastEventId`), in one connection. */
async function follow(base: string, runId: string, query = "", headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/chats/${runId}/stream${query}`, { headers });
  const parts: SsePart[] = [];
  const reading = sseParts(response);
  for (let next = await reading.next(); ; next = await reading.next()) {
    if (next.done === true) return { response, parts, done: next.value.done };
    parts.push(next.value);
  }
}

const ids = (parts: readonly SsePart[]) => parts.flatMap((part) => (part.id === undefined ? [] : [part.id]));
const chunkTypes = (part: SsePart | undefined) => part?.chunks.map((chunk) => chunk.type);

async function doneChat(base: string, message = "What is a durable stream?") {
  const started = await post(`${base}/chats`, { message });
  expect(started.status).toBe(202);
  const runId = String(started.body["runId"]);
  const all = await follow(base, runId, "?from=0");
  return { runId, all };
}

describe("the chat's routes, a server and a worker process on one SQLite file", () => {
  it("POST /chats starts a chat on the fleet; its stream gives every part once, each with its offset as id, and the model's reply", async () => {
    const { base } = await example();
    const { runId, all } = await doneChat(base);
    expect(all.response.status).toBe(200);
    expect(all.response.headers.get("content-type")).toBe("text/event-stream");
    expect(all.response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(all.done).toBe(true);
    expect(ids(all.parts)).toEqual([...Array(ids(all.parts).length).keys()]);
    expect(textOf(all.parts)).toBe(CHAT_REPLY_TEXT);
    expect(chunkTypes(all.parts[0])).toEqual(["start", "data-durable"]);
    expect(chunkTypes(all.parts.at(-1))).toEqual(["finish-step", "finish"]);
    const chunks = all.parts.flatMap((part) => part.chunks);
    expect(chunks.filter((chunk) => chunk.type === "tool-input-available")).toEqual([
      {
        type: "tool-input-available",
        toolCallId: "look-up-1",
        toolName: "look_up",
        input: { question: "What is a durable stream?" },
      },
    ]);
    expect(chunks.filter((chunk) => chunk.type === "tool-output-available")).toHaveLength(1);

    // The saved history, and `streamed`: the stream's length once the chat is done.
    const saved = (await (await fetch(`${base}/chats/${runId}`)).json()) as Record<string, unknown>;
    expect(saved).toMatchObject({ runId, status: "done", streamed: ids(all.parts).length });
    expect((saved["messages"] as { role: string; content: string }[]).map((m) => [m.role, m.content])).toEqual([
      ["user", "What is a durable stream?"],
      ["assistant", CHAT_SCRIPT.lookUp],
      ["tool", expect.any(String)],
      ["assistant", CHAT_SCRIPT.answer],
    ]);
  }, 60_000);

  it("resumes from ?from=N or after Last-Event-ID (which wins), and answers 204 once nothing more comes", async () => {
    const { base } = await example();
    const { runId, all } = await doneChat(base);
    const length = ids(all.parts).length;
    // A part that goes on with a text the part before it began: the resume opens a text part for it.
    const middle = all.parts.findIndex(
      (part, i) =>
        i > 0 && part.chunks.at(-1)?.type === "text-delta" && all.parts[i - 1]?.chunks.at(-1)?.type === "text-delta",
    );
    expect(middle).toBeGreaterThan(0);
    const fromMiddle = await follow(base, runId, `?from=${middle}`);
    expect(fromMiddle.parts[0]?.id).toBe(middle);
    expect(chunkTypes(fromMiddle.parts[0])).toEqual(["start", "text-start", "text-delta"]);
    expect(ids(fromMiddle.parts)).toEqual(ids(all.parts).slice(middle));
    expect(textOf(all.parts.slice(0, middle)) + textOf(fromMiddle.parts)).toBe(CHAT_REPLY_TEXT);
    // An EventSource reconnects to the URL it opened first, with Last-Event-ID: the header wins over ?from.
    const afterLast = await follow(base, runId, "?from=0", { "last-event-id": String(middle - 1) });
    expect(afterLast.parts).toEqual(fromMiddle.parts);
    for (const [query, headers] of [
      [`?from=${length}`, {}],
      ["?from=0", { "last-event-id": String(length - 1) }],
    ] as const) {
      const response = await fetch(`${base}/chats/${runId}/stream${query}`, { headers });
      expect(response.status).toBe(204);
      expect(await response.text()).toBe("");
    }
  }, 60_000);

  it("refuses what is no offset and a message that is no text (400), and a chat it does not know (404)", async () => {
    const { base } = await example({ worker: false });
    const { body } = await post(`${base}/chats`, { message: "Still there?" });
    const runId = String(body["runId"]);
    // Queued (no worker): the saved history is the question, and its stream has not begun.
    expect(await (await fetch(`${base}/chats/${runId}`)).json()).toMatchObject({ status: "running", streamed: 0 });
    for (const [query, headers] of [
      ["?from=abc", {}],
      ["?from=-1", {}],
      ["", { "last-event-id": "seven" }],
    ] as const) {
      const response = await fetch(`${base}/chats/${runId}/stream${query}`, { headers });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: expect.any(String) });
    }
    for (const message of [5, "", "x".repeat(2_001)])
      expect(await post(`${base}/chats`, { message })).toMatchObject({
        status: 400,
        body: { error: expect.any(String) },
      });
    expect((await fetch(`${base}/chats/no-such-chat`)).status).toBe(404);
    expect((await fetch(`${base}/chats/no-such-chat/stream`)).status).toBe(404);
  }, 60_000);

  it("a client that drops its connection mid-reply goes on with Last-Event-ID: every part once, in order", async () => {
    const { base } = await example();
    const { body } = await post(`${base}/chats`, { message: "And if my connection drops?" });
    const runId = String(body["runId"]);
    const got: SsePart[] = [];
    const connection = new AbortController();
    const response = await fetch(`${base}/chats/${runId}/stream?from=0`, { signal: connection.signal });
    await expect(
      (async () => {
        for await (const part of sseParts(response)) {
          got.push(part);
          // Some words of the reply came: the connection drops.
          if (textOf(got).length > CHAT_SCRIPT.lookUp.length) connection.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    const last = ids(got).at(-1) as number;
    const rest = await follow(base, runId, "", { "last-event-id": String(last) });
    expect(rest.parts[0]?.id).toBe(last + 1);
    expect(rest.done).toBe(true);
    const both = [...got, ...rest.parts];
    expect(ids(both)).toEqual([...Array(ids(both).length).keys()]);
    expect(textOf(both)).toBe(CHAT_REPLY_TEXT);
    await until("the chat is done", async () => {
      const saved = (await (await fetch(`${base}/chats/${runId}`)).json()) as { status: string };
      return saved.status === "done";
    });
  }, 60_000);
});
