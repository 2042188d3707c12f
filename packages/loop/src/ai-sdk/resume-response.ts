import { InvalidInput } from "@durable/core";
import { UI_MESSAGE_STREAM_HEADERS } from "ai";
import { type FollowToolLoopOptions, followToolLoop, type LoopFollowedPart } from "../follow-tool-loop.js";
import { followedChunkGroups } from "./follow-ui-stream.js";
import type { ChunkGroup } from "./ui-chunks.js";

/** Which run's stream a route resumes, and from where. */
export interface ResumeStreamOptions extends FollowToolLoopOptions {
  /**
   * The request's `Last-Event-ID` header (`request.headers.get("last-event-id")`):
   * the offset of the last part the client got. The stream resumes after it,
   * whatever `from` says (an `EventSource` reconnects to the URL it opened
   * first, with this header).
   */
  readonly lastEventId?: string | null;
  /** More response headers, beside the UI message stream's. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A route's answer that resumes a loop's stream from the store, in any
 * process: Server-Sent Events in the AI SDK's UI message stream format (as
 * `createUIMessageStreamResponse` gives them, its headers with
 * `x-vercel-ai-ui-message-stream: v1`; `useChat`'s `resume` reads it), the
 * chunks `followUIMessageStream` gives. Each part's events end with an SSE
 * `id:` line, its offset (a part void or with nothing to show is an event of
 * its `id` alone), so a client that reconnects asks for what follows its last
 * id, with `from` or `Last-Event-ID`. Resolves once the first part is read:
 * `204` with no body when the run has nothing more to stream (it ended, or
 * waits, and the client has every part). Following stops when the client
 * goes (the body is cancelled) or `signal` aborts. Refusals (`InvalidInput`,
 * an unknown run's `CheckpointNotFound`) are thrown, for the route to answer.
 */
export async function resumeStreamResponse(runId: string, options: ResumeStreamOptions): Promise<Response> {
  const { lastEventId, headers, signal, from, ...follow } = options;
  const start = resumeFrom(lastEventId, from);
  // Stops following when the client goes or `signal` aborts (forwarded by hand: Node 20's AbortSignal.any may drop it).
  const stop = new AbortController();
  const forward = () => stop.abort();
  if (signal?.aborted === true) stop.abort();
  signal?.addEventListener("abort", forward, { once: true });
  const parts = followToolLoop(runId, {
    ...follow,
    ...(start === undefined ? {} : { from: start }),
    signal: stop.signal,
  });
  const first = await parts.next();
  if (first.done === true) return new Response(null, { status: 204, headers });
  const groups = followedChunkGroups(runId, prepend(first.value, parts));
  const encoder = new TextEncoder();
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await groups.next();
      if (cancelled) return;
      if (next.done === true) {
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      } else controller.enqueue(encoder.encode(sseEvents(next.value)));
    },
    cancel() {
      cancelled = true;
      stop.abort();
      groups.return(undefined).catch(() => undefined);
    },
  });
  const all = new Headers(headers);
  for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADERS)) if (!all.has(name)) all.set(name, value);
  return new Response(body, { status: 200, headers: all });
}

/** Where a client resumes: after the part its `Last-Event-ID` names, else `from`. */
function resumeFrom(lastEventId: string | null | undefined, from: number | undefined): number | undefined {
  if (lastEventId === undefined || lastEventId === null || lastEventId === "") return from;
  const last = /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : Number.NaN;
  if (!Number.isSafeInteger(last))
    throw new InvalidInput(
      `resumeStreamResponse: Last-Event-ID must be the offset of a part the stream gave (a whole number), not ${JSON.stringify(lastEventId.slice(0, 40))}.`,
    );
  return last + 1;
}

/** One group's chunks as SSE events, the last with the group's part's offset as its `id`. */
function sseEvents({ part, chunks }: ChunkGroup<LoopFollowedPart>): string {
  const events = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n`);
  if (part === undefined) return events.map((event) => `${event}\n`).join("");
  const id = `id: ${part.offset}\n`;
  if (events.length === 0) return `${id}\n`;
  return events.map((event, i) => (i === events.length - 1 ? `${id}${event}\n` : `${event}\n`)).join("");
}

/** `first`, then the rest of `rest`; ending it ends `rest`. */
async function* prepend<T>(first: T, rest: AsyncGenerator<T, void, undefined>): AsyncGenerator<T, void, undefined> {
  try {
    yield first;
    yield* rest;
  } finally {
    await rest.return(undefined);
  }
}
