import type { JsonObject, StreamWriter } from "@durable/core/runner";
import type { Message } from "./message.js";
import type { ModelStreamPart } from "./model.js";
import type { ModelUsage } from "./usage.js";

/**
 * What a streaming loop (`streamToolLoop`) gives its caller, in order:
 * `run-start` each time a worker takes the run up (`recovered` after a crash:
 * `messages` is the history as saved, so a consumer that saw parts of a reply
 * the crash cut off drops them and redraws from it); per model call
 * `step-start`, the model's own parts as they arrive (text, reasoning, tool
 * calls), and `step-finish` with the reply as saved; then a `tool-result` per
 * call of its round. A model call cut off by a crash was never saved: it runs
 * again after the recovery's `run-start`.
 */
export type LoopStreamPart =
  | {
      readonly type: "run-start";
      readonly runId: string;
      readonly recovered: boolean;
      readonly messages: readonly Message[];
    }
  | { readonly type: "step-start"; readonly runId: string; readonly round: number; readonly modelCall: number }
  | ModelStreamPart
  | {
      readonly type: "step-finish";
      readonly runId: string;
      readonly round: number;
      readonly message: Message;
      readonly usage?: ModelUsage;
      readonly finishReason?: string;
    }
  | { readonly type: "tool-result"; readonly runId: string; readonly round: number; readonly message: Message };

/** Where a loop sends its stream parts; nothing when the caller does not stream. */
export type PartSink = ((part: LoopStreamPart) => void) | undefined;

/**
 * Where a step's parts go: to the caller that streams (`sink`), and to the
 * run's stream in the store (`stream`, when the loop writes one), as the
 * same part without its run id (the stream is the run's). Undefined when
 * neither takes them: the model is then not asked to stream.
 */
export function partSink(sink: PartSink, stream: StreamWriter | undefined): PartSink {
  if (stream === undefined) return sink;
  return (part) => {
    sink?.(part);
    const { runId: _runId, ...stored } = part as LoopStreamPart & { runId?: string };
    stream.write(stored as JsonObject);
  };
}

/** A push-fed async iterable for one consumer: parts wait in memory until it reads them. */
export class PartQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #error: { readonly error: unknown } | undefined;

  push(item: T): void {
    this.#items.push(item);
    this.#wakeUp();
  }

  /** No more parts; `error` is thrown to the consumer once it has read the rest. */
  end(error?: { readonly error: unknown }): void {
    this.#ended = true;
    this.#error = error;
    this.#wakeUp();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) yield item;
      else if (this.#ended) {
        if (this.#error !== undefined) throw this.#error.error;
        return;
      } else await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
