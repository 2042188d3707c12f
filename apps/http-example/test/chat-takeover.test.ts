import { describe, expect, it } from "vitest";
import { CHAT_REPLY_TEXT, CHAT_SCRIPT } from "../src/chat-model.js";
import { type ExampleProcess, examples, post } from "./example.js";
import { type SsePart, sseParts, textOf } from "./sse.js";

// A chat followed through the server process while the worker process driving it is SIGKILLed mid-reply and
// another worker process takes it over: the client, reconnecting after its last offset, misses nothing and gets
// nothing twice, and the parts the dead worker wrote are voided by the takeover's data-durable part.

const example = examples();

const ids = (parts: readonly SsePart[]) => parts.flatMap((part) => (part.id === undefined ? [] : [part.id]));
const chunks = (parts: readonly SsePart[]) => parts.flatMap((part) => part.chunks);

describe("a chat whose worker process dies mid-reply", () => {
  it("is taken over by another worker; the client, reconnecting after its last offset, ends with the model's reply: each part once, the cut-off ones voided", async () => {
    const { base, worker } = await example({ worker: false });
    // Two workers stand by, each with a 1 s lease on the chats it drives.
    const standing = await Promise.all([worker(1_000), worker(1_000)]);
    const { body } = await post(`${base}/chats`, { message: "What if the worker dies?" });
    const runId = String(body["runId"]);
    const tookUp = new RegExp(`^worker: took up chat ${runId} `);
    // The worker that took the chat up says so: it is the one killed, the other takes over.
    const [dying, taking] = await Promise.race(
      standing.map(async (each, i) => {
        await each.line(tookUp);
        return (i === 0 ? standing : [...standing].reverse()) as [ExampleProcess, ExampleProcess];
      }),
    );

    // The client follows from the start; once some words of the answer came, the worker dies and the connection drops.
    const first: SsePart[] = [];
    const connection = new AbortController();
    const response = await fetch(`${base}/chats/${runId}/stream?from=0`, { signal: connection.signal });
    await expect(
      (async () => {
        for await (const part of sseParts(response)) {
          first.push(part);
          if (textOf(first).length < CHAT_SCRIPT.lookUp.length + 20) continue;
          dying.child.kill("SIGKILL");
          connection.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    expect(textOf(first).startsWith(CHAT_SCRIPT.lookUp + CHAT_SCRIPT.answer.slice(0, 20))).toBe(true);

    // It reconnects after the last offset it got, again whenever its connection ends early, until the stream's end.
    const rest: SsePart[] = [];
    for (let done = false; !done; ) {
      const last = ids([...first, ...rest]).at(-1) as number;
      const reading = sseParts(
        await fetch(`${base}/chats/${runId}/stream`, { headers: { "last-event-id": String(last) } }),
      );
      for (let next = await reading.next(); ; next = await reading.next()) {
        if (next.done === true) {
          done = next.value.done;
          break;
        }
        rest.push(next.value);
      }
    }
    await taking.line(tookUp);
    expect(dying.child.signalCode).toBe("SIGKILL");

    // Every part once, in order: offsets 0, 1, 2, … across both connections.
    const all = [...first, ...rest];
    expect(ids(all)).toEqual([...Array(ids(all).length).keys()]);
    // The takeover's data-durable part voids what the dead worker wrote of the answer, some of which the client got.
    const recoveries = chunks(rest).filter((chunk) => chunk.type === "data-durable" && chunk.data.recovered);
    expect(recoveries).toHaveLength(1);
    const { from, to } = (recoveries[0] as { data: { abandons: { from: number; to: number } } }).data.abandons;
    expect(ids(first).filter((id) => id >= from && id < to).length).toBeGreaterThan(0);
    const voided = all.filter((part) => part.id !== undefined && part.id >= from && part.id < to);
    const kept = all.filter((part) => !voided.includes(part));
    expect(CHAT_SCRIPT.answer.startsWith(textOf(voided))).toBe(true);
    expect(textOf(voided).length).toBeGreaterThanOrEqual(20);
    // What the client shows once it removed them: exactly the model's reply, its tool called and answered once.
    expect(textOf(kept)).toBe(CHAT_REPLY_TEXT);
    expect(chunks(kept).filter((chunk) => chunk.type === "tool-input-available")).toHaveLength(1);
    expect(chunks(kept).filter((chunk) => chunk.type === "tool-output-available")).toHaveLength(1);
    const saved = (await (await fetch(`${base}/chats/${runId}`)).json()) as Record<string, unknown>;
    expect(saved).toMatchObject({ status: "done", streamed: ids(all).length });
  }, 60_000);
});
