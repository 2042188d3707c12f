import type { UIChunk } from "@durable/loop/ai-sdk";

/** One part of a chat's stream as a client keeps it: its offset (the `id` of its last event) and its chunks. */
export interface SsePart {
  /** Undefined for the chunks after the last part (`finish`). */
  readonly id: number | undefined;
  readonly chunks: readonly UIChunk[];
}

/**
 * The parts of an SSE response of the chat's stream, as they come: the
 * events up to one with an `id` are that part's; the iteration ends at
 * `data: [DONE]` (with the chunks after the last part, `id` undefined), or
 * when the body ends without it (a dropped connection; it throws when the
 * fetch was aborted).
 */
export async function* sseParts(response: Response): AsyncGenerator<SsePart, { done: boolean }, undefined> {
  const decoder = new TextDecoder();
  let buffer = "";
  let chunks: UIChunk[] = [];
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    buffer += decoder.decode(read.value, { stream: true });
    const events = buffer.split("\n\n");
    buffer = events.pop() ?? "";
    for (const event of events) {
      let id: number | undefined;
      for (const line of event.split("\n")) {
        if (line === "data: [DONE]") {
          yield { id: undefined, chunks };
          return { done: true };
        }
        if (line.startsWith("id: ")) id = Number(line.slice(4));
        else if (line.startsWith("data: ")) chunks.push(JSON.parse(line.slice(6)) as UIChunk);
        else throw new Error(`an SSE line the chat's stream should not give: ${line}`);
      }
      if (id !== undefined) {
        yield { id, chunks };
        chunks = [];
      }
    }
  }
  return { done: false };
}

/** The text the parts say. */
export const textOf = (parts: readonly SsePart[]): string =>
  parts
    .flatMap((part) => part.chunks)
    .map((chunk) => (chunk.type === "text-delta" ? chunk.delta : ""))
    .join("");
