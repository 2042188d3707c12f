import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { InvalidInput } from "@durable/core";
import type { Chats } from "./chat.js";
import { jsonBody, reply } from "./http-json.js";

/** The chat page and its script, plain files sent as they are (no bundler). */
const PAGE = {
  "/": { type: "text/html; charset=utf-8", body: readFileSync(new URL("./page/chat.html", import.meta.url)) },
  "/chat.js": {
    type: "text/javascript; charset=utf-8",
    body: readFileSync(new URL("./page/chat.js", import.meta.url)),
  },
} as const;

/**
 * The chat routes, or false when the request is none of them: `GET /`, the
 * page; `POST /chats` `{ message }` starts a chat on the fleet and answers
 * 202 `{ runId }` at once; `GET /chats/:id` answers the chat as saved and
 * `streamed`, where its stream goes on after it; `GET /chats/:id/stream`
 * follows the stream from `?from=N`, or after the `Last-Event-ID` header's
 * offset (SSE in the AI SDK's UI message stream format, each part's offset
 * its event id; 204 once nothing more comes).
 */
export async function chatRoute(
  chats: Chats,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
): Promise<boolean> {
  const { pathname, searchParams } = url;
  const chat = /^\/chats\/([^/]+)(\/stream)?$/.exec(pathname);
  const page =
    request.method === "GET" && Object.hasOwn(PAGE, pathname) ? PAGE[pathname as keyof typeof PAGE] : undefined;
  if (page !== undefined) {
    response.writeHead(200, { "content-type": page.type, "cache-control": "no-store" }).end(page.body);
  } else if (request.method === "POST" && pathname === "/chats") {
    const body = await jsonBody(request, '{"message":"What is a durable stream?"}');
    const message = typeof body === "object" && body !== null ? (body as { message?: unknown }).message : undefined;
    if (typeof message !== "string" || message.trim() === "" || message.length > 2_000)
      throw new InvalidInput('The body must be {"message": "<your question, 1 to 2000 characters>"}.');
    reply(response, 202, { runId: await chats.start(message) });
  } else if (request.method === "GET" && chat !== null) {
    const runId = decodeURIComponent(chat[1] ?? "");
    if (chat[2] === undefined) {
      const { status, messages, streamed } = await chats.read(runId);
      reply(response, 200, { runId, status, messages, streamed: streamed ?? 0 });
    } else await streamChat(chats, runId, request, response, searchParams.get("from"));
  } else return false;
  return true;
}

/** Sends the chat's stream from where the client asks, until it ends or the client goes. */
async function streamChat(
  chats: Chats,
  runId: string,
  request: IncomingMessage,
  response: ServerResponse,
  from: string | null,
): Promise<void> {
  // The client may go before the first part comes: following stops then too.
  const gone = new AbortController();
  response.once("close", () => gone.abort());
  const lastEventId = request.headers["last-event-id"];
  const web = await chats.stream(runId, {
    ...(from === null ? {} : { from: Number(from) }),
    ...(typeof lastEventId === "string" ? { lastEventId } : {}),
    signal: gone.signal,
  });
  response.writeHead(web.status, Object.fromEntries(web.headers));
  if (web.body === null) return void response.end();
  // Each part's events go out as they come; a client that goes cancels the body, which stops following.
  await pipeline(Readable.fromWeb(web.body as NodeReadableStream<Uint8Array>), response).catch(() => undefined);
}
