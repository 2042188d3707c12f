import type { LoopFollowedPart } from "../follow-tool-loop.js";
import { type ChunkGroup, chunkGroups, chunkStream, type UIChunk } from "./ui-chunks.js";

/**
 * A loop's stream followed from the store (`followToolLoop`) as the AI SDK's
 * UI message stream, the chunks `toUIMessageStream` gives for the same parts:
 * a part `abandoned` is dropped; each `attempt` (a worker took the run up) is
 * a `data-durable` part `{ runId, recovered, attempt }`, with `recovered:
 * true` and `abandons: { from, to }` when the offsets of parts a cut-off drive
 * wrote are void (a client that rendered them removes them). Following from
 * the middle of a step gives what follows only: a text or reasoning part it
 * joins opens anew, and the step's end repeats nothing from before. Cancel the
 * stream (or abort the follow's `signal`) to stop following.
 */
export function followUIMessageStream(runId: string, parts: AsyncIterable<LoopFollowedPart>): ReadableStream<UIChunk> {
  return chunkStream(followedChunkGroups(runId, parts));
}

/** The UI chunks of followed parts, grouped by the part each came from (its offset is the group's). */
export function followedChunkGroups(
  runId: string,
  parts: AsyncIterable<LoopFollowedPart>,
): AsyncGenerator<ChunkGroup<LoopFollowedPart>, void, undefined> {
  return chunkGroups(parts, (ui, { abandoned, part }) => {
    if (abandoned) return;
    switch (part.type) {
      case "attempt": {
        const { attempt, abandons } = part;
        ui.durable({
          runId,
          recovered: abandons !== undefined,
          attempt,
          ...(abandons === undefined ? {} : { abandons }),
        });
        break;
      }
      case "stream-full": // followToolLoop throws StreamTooLong there, which ends the stream with an error part
        break;
      default:
        ui.part(part);
    }
  });
}
