import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { drain } from "@durable/core";
import type { FlowRunner } from "@durable/flow";
import type { Chats } from "./chat.js";
import { chatRoute } from "./chat-routes.js";
import { greeting, greetings } from "./greeting.js";
import { httpError, jsonBody, reply } from "./http-json.js";

/**
 * `POST /runs` starts a run on the fleet and answers 202 at once; `GET /runs/:id`
 * answers where it stands and, once done, its result; `POST /drain` is the
 * route a cron job calls on a serverless platform, where no worker stands.
 * The chat's routes (`GET /`, `/chats`) are `chatRoute`'s.
 */
export function exampleServer(runner: FlowRunner, chats: Chats): Server {
  return createServer((request, response) => {
    route(runner, chats, request, response).catch((error: unknown) => {
      const [status, message] = httpError(error);
      // An error once a stream's headers went out ends that response; the client reconnects.
      if (response.headersSent) response.destroy();
      else reply(response, status, { error: message });
    });
  });
}

async function route(
  runner: FlowRunner,
  chats: Chats,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  const { pathname } = url;
  const runId = /^\/runs\/([^/]+)$/.exec(pathname)?.[1];
  if (await chatRoute(chats, request, response, url)) return;
  if (request.method === "POST" && pathname === "/runs") {
    // The client's Idempotency-Key is the run id: a retried POST gets the same run and starts nothing new.
    const key = request.headers["idempotency-key"];
    const body = await jsonBody(request, '{"name":"Ada"}');
    // One greeting per name at a time: the name is the run's concurrency key on the queue.
    const name = typeof body === "object" && body !== null ? (body as { name?: unknown }).name : undefined;
    const handle = await runner.start(greeting, body, {
      ...(typeof key === "string" ? { runId: key } : {}),
      queue: greetings,
      ...(typeof name === "string" && name !== "" ? { concurrencyKey: name.slice(0, 200) } : {}),
    });
    reply(response, 202, { runId: handle.runId });
  } else if (request.method === "GET" && runId !== undefined) {
    const handle = runner.handle(greeting, decodeURIComponent(runId));
    const status = await handle.status();
    const result = status.status === "done" ? { result: await handle.result() } : {};
    reply(response, 200, { runId: handle.runId, ...status, ...result });
  } else if (request.method === "POST" && pathname === "/drain") {
    // Drives what is queued for up to 10 s, gives up the rest for the next call, and says what it did.
    reply(response, 200, await drain({ serve: [runner.served(greeting)], queues: [greetings], deadlineMs: 10_000 }));
  } else
    reply(response, 404, {
      error:
        "GET / (the chat page), POST /chats, GET /chats/:id, GET /chats/:id/stream, POST /runs, GET /runs/:id or POST /drain",
    });
}
