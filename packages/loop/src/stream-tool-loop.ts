import { newRunId, type ToolRegistry } from "@durable/core";
import type { LoopResult } from "./loop-result.js";
import type { Message } from "./message.js";
import type { LoopModel } from "./model.js";
import { type LoopStreamPart, PartQueue, type PartSink } from "./stream-parts.js";
import type { RecoverToolLoopOptions, ToolLoopOptions } from "./loop-options.js";
import { loopDriver, startOrContinue } from "./tool-loop.js";

/**
 * A loop that streams: iterate it (or `parts`) for its `LoopStreamPart`s as
 * they arrive, and await `result` for where it stands at the end. Iterating
 * throws what stopped the run, after the parts before it.
 */
export interface LoopStream extends AsyncIterable<LoopStreamPart> {
  readonly runId: string;
  readonly parts: AsyncIterable<LoopStreamPart>;
  readonly result: Promise<LoopResult>;
}

/**
 * `runToolLoop` that streams: the model's text, reasoning and tool calls
 * reach the caller as they arrive (the model must stream: `aiSdkModel` uses
 * `streamText` then), each reply and tool result as it is done. A reply is
 * saved once it is complete, as in `runToolLoop`: a crash mid-reply loses
 * that reply, and the recovery asks the model again.
 */
export function streamToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  messages: readonly Message[],
  options: ToolLoopOptions,
): LoopStream {
  const runId = options.runId ?? newRunId();
  return streaming(runId, (sink) =>
    startOrContinue("streamToolLoop", model, registry, messages, { ...options, runId }, sink),
  );
}

/**
 * `recoverToolLoop` that streams: a `run-start` part marked `recovered`, with
 * the history as saved, then the parts of the steps it takes from there.
 */
export function streamRecoveredToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  runId: string,
  options: RecoverToolLoopOptions,
): LoopStream {
  return streaming(runId, (sink) =>
    loopDriver("streamRecoveredToolLoop", model, registry, options, sink).recover(runId, options),
  );
}

function streaming(runId: string, drive: (sink: PartSink) => Promise<LoopResult>): LoopStream {
  const queue = new PartQueue<LoopStreamPart>();
  const result = (async () => drive((part) => queue.push(part)))();
  result.then(
    () => queue.end(),
    (error: unknown) => queue.end({ error }),
  );
  // A caller that only iterates hears of a failure there; `result` rejects too, for one that awaits it.
  result.catch(() => undefined);
  return { runId, parts: queue, result, [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator]() };
}
