import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { CheckpointConflict, CheckpointNotFound, drain, InvalidInput } from "@durable/core";
import type { FlowRunner } from "@durable/flow";
import { greeting, greetings } from "./greeting.js";

/**
 * `POST /runs` starts a run on the fleet and answers 202 at once; `GET /runs/:id`
 * answers where it stands and, once done, its result; `POST /drain` is the
 * route a cron job calls on a serverless platform, where no worker stands.
 */
export function greetingServer(runner: FlowRunner): Server {
  return createServer((request, response) => {
    route(runner, request, response).catch((error: unknown) => {
      const [status, message] = httpError(error);
      reply(response, status, { error: message });
    });
  });
}

async function route(runner: FlowRunner, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { pathname } = new URL(request.url ?? "/", "http://localhost");
  const runId = /^\/runs\/([^/]+)$/.exec(pathname)?.[1];
  if (request.method === "POST" && pathname === "/runs") {
    // The client's Idempotency-Key is the run id: a retried POST gets the same run and starts nothing new.
    const key = request.headers["idempotency-key"];
    const body = await jsonBody(request);
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
  } else reply(response, 404, { error: "POST /runs, GET /runs/:id or POST /drain" });
}

async function jsonBody(request: IncomingMessage): Promise<unknown> {
  let text = "";
  for await (const chunk of request) text += String(chunk);
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInput('The body must be JSON, e.g. {"name":"Ada"}.');
  }
}

/** A bad request, an unknown run, an id taken by another kind of run; else the server's fault. */
function httpError(error: unknown): [number, string] {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof InvalidInput) return [400, message];
  if (error instanceof CheckpointNotFound) return [404, message];
  if (error instanceof CheckpointConflict) return [409, message];
  return [500, message];
}

function reply(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
