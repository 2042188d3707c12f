import type { LoopStreamPart } from "../stream-parts.js";
import { chunkGroups, chunkStream, type UIChunk } from "./ui-chunks.js";

/**
 * A streaming loop's parts as the AI SDK's UI message stream (for
 * `createUIMessageStreamResponse({ stream })` in a route, read by `useChat`):
 * each model call is a step with its text, reasoning and tool calls, then its
 * tool results; each time a worker takes the run up a `data-durable` part says
 * so (`recovered` after a crash: drop the cut-off step's parts). A run that
 * fails ends with an `error` part.
 */
export function toUIMessageStream(parts: AsyncIterable<LoopStreamPart>): ReadableStream<UIChunk> {
  return chunkStream(
    chunkGroups(parts, (ui, part) => {
      if (part.type !== "run-start") return ui.part(part);
      const { runId, recovered, messages } = part;
      ui.durable({ runId, recovered, messages: messages.length });
    }),
  );
}
