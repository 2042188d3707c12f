import type { IncomingMessage, ServerResponse } from "node:http";
import { CheckpointConflict, CheckpointNotFound, InvalidInput } from "@durable/core";

/** The request's body as JSON, or `InvalidInput` that shows `example`. */
export async function jsonBody(request: IncomingMessage, example: string): Promise<unknown> {
  let text = "";
  for await (const chunk of request) text += String(chunk);
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInput(`The body must be JSON, e.g. ${example}.`);
  }
}

/** A bad request, an unknown run, an id taken by another kind of run; else the server's fault. */
export function httpError(error: unknown): [number, string] {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof InvalidInput) return [400, message];
  if (error instanceof CheckpointNotFound) return [404, message];
  if (error instanceof CheckpointConflict) return [409, message];
  return [500, message];
}

export function reply(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
