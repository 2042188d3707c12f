import type { JsonValue } from "@durable/core";
import { errorText } from "@durable/core/runner";
import type { UIMessageChunk } from "ai";
import type { LoopStreamRecord } from "../follow-tool-loop.js";
import type { LoopStreamPart } from "../stream-parts.js";

/** What the `data-durable` part of a UI message stream says: where the run stands, each time a worker takes it up. */
export interface DurableRunData {
  readonly runId: string;
  /**
   * True after a crash: the parts of a step that was cut off are void, and
   * the step runs again. On a followed stream (`followUIMessageStream`), true
   * when `abandons` says which parts are void.
   */
  readonly recovered: boolean;
  /** How many messages the saved history holds (`toUIMessageStream`; a followed stream does not know it). */
  readonly messages?: number;
  /** The drive that takes the run up, from 0 (a followed stream). */
  readonly attempt?: number;
  /**
   * The offsets (`from` up to, not with, `to`) of the parts a cut-off drive
   * wrote, now void: a client that rendered them removes them (a followed
   * stream; each of its events' SSE `id` is its part's offset).
   */
  readonly abandons?: { readonly from: number; readonly to: number };
}

/** What the `data-tool` part of a UI message stream says: what a tool wrote to the run's stream (`ctx.writeData`). */
export interface DurableToolData {
  /** The call that wrote it, as its tool's `ctx.callId` says. */
  readonly callId: string;
  readonly data: JsonValue;
}

/** A chunk of the UI message stream the loop gives: the AI SDK's, with its `data-durable` and `data-tool` parts. */
export type UIChunk = UIMessageChunk<unknown, { durable: DurableRunData; tool: DurableToolData }>;

/** A part of a step, in process (`LoopStreamPart`) or followed from the store (`LoopStreamRecord`): its run id is not read. */
export type StepPart =
  | Exclude<LoopStreamPart, { type: "run-start" }>
  | Exclude<LoopStreamRecord, { type: "attempt" | "stream-full" }>;

/** The chunks one source part gave (none for a part with nothing to show); the first and last groups have no part. */
export interface ChunkGroup<P> {
  readonly part?: P;
  readonly chunks: readonly UIChunk[];
}

/**
 * A UI message stream as groups of chunks, one per part of `parts`: `start`
 * first, then what `feed` makes each part give, then `finish`, or `error`
 * with the error that ended `parts`. Shared by every stream the adapter
 * gives, so each gives the same chunks for the same parts.
 */
export async function* chunkGroups<P>(
  parts: AsyncIterable<P>,
  feed: (ui: UIChunks, part: P) => void,
): AsyncGenerator<ChunkGroup<P>, void, undefined> {
  const chunks: UIChunk[] = [];
  const ui = new UIChunks((chunk) => chunks.push(chunk));
  ui.push({ type: "start" });
  yield { chunks: chunks.splice(0) };
  try {
    for await (const part of parts) {
      feed(ui, part);
      yield { part, chunks: chunks.splice(0) };
    }
    ui.endStep();
    ui.push({ type: "finish" });
  } catch (error) {
    ui.endStep();
    ui.push({ type: "error", errorText: errorText(error) });
  }
  yield { chunks: chunks.splice(0) };
}

/** The chunks of `groups` as a stream; cancelling it ends the groups (and the parts they read). */
export function chunkStream(groups: AsyncGenerator<ChunkGroup<unknown>, void, undefined>): ReadableStream<UIChunk> {
  return new ReadableStream<UIChunk>({
    async pull(controller) {
      for (;;) {
        const next = await groups.next();
        if (next.done === true) return controller.close();
        for (const chunk of next.value.chunks) controller.enqueue(chunk);
        if (next.value.chunks.length > 0) return;
      }
    },
    async cancel() {
      await groups.return(undefined);
    },
  });
}

/** Turns loop parts into UI chunks, keeping which text, reasoning and step are open. */
export class UIChunks {
  readonly push: (chunk: UIChunk) => void;
  #step = false;
  #text: string | undefined;
  #reasoning: string | undefined;
  #ids = 0;
  /**
   * Whether the model streamed this step's text and tool calls (a model that
   * does not gives them whole at its end); undefined for a step whose start
   * came before the stream joined it: what it streamed before may have been
   * given already, so its end repeats nothing.
   */
  #streamed: { text: boolean; calls: Set<string> } | undefined;

  constructor(push: (chunk: UIChunk) => void) {
    this.push = push;
  }

  /** A worker took the run up: the open step ends, and a `data-durable` part says where the run stands. */
  durable(data: DurableRunData): void {
    this.endStep();
    this.push({ type: "data-durable", data });
  }

  part(part: StepPart): void {
    switch (part.type) {
      case "step-start":
        this.endStep();
        this.#step = true;
        this.#streamed = { text: false, calls: new Set() };
        this.push({ type: "start-step" });
        break;
      case "text-delta":
        if (this.#streamed !== undefined) this.#streamed.text = true;
        this.#textDelta(part.text);
        break;
      case "reasoning-delta":
        this.#closeText();
        this.#reasoning ??= this.#open("reasoning-start");
        this.push({ type: "reasoning-delta", id: this.#reasoning, delta: part.text });
        break;
      case "tool-call":
        this.#closeText();
        this.#closeReasoning();
        this.#streamed?.calls.add(part.toolCallId);
        this.push({
          type: "tool-input-available",
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          input: part.args,
        });
        break;
      case "step-finish": {
        const { message } = part;
        const streamed = this.#streamed;
        if (streamed !== undefined && !streamed.text && message.content !== "") this.#textDelta(message.content);
        this.#closeText();
        this.#closeReasoning();
        if (streamed !== undefined && message.role === "assistant")
          for (const call of message.toolCalls ?? [])
            if (!streamed.calls.has(call.id))
              this.push({ type: "tool-input-available", toolCallId: call.id, toolName: call.name, input: call.args });
        break;
      }
      case "tool-result": {
        const { message } = part;
        if (message.role !== "tool") break;
        this.push(
          message.isError === true
            ? { type: "tool-output-error", toolCallId: message.toolCallId, errorText: message.content }
            : {
                type: "tool-output-available",
                toolCallId: message.toolCallId,
                output: message.result ?? message.content,
              },
        );
        break;
      }
      case "data":
        this.push({ type: "data-tool", data: { callId: part.callId, data: part.data } });
        break;
    }
  }

  /** Closes the open step: its tool results came after its reply. */
  endStep(): void {
    this.#closeText();
    this.#closeReasoning();
    if (this.#step) this.push({ type: "finish-step" });
    this.#step = false;
  }

  #textDelta(text: string): void {
    this.#closeReasoning();
    this.#text ??= this.#open("text-start");
    this.push({ type: "text-delta", id: this.#text, delta: text });
  }

  #open(type: "text-start" | "reasoning-start"): string {
    const id = `${type === "text-start" ? "text" : "reasoning"}-${++this.#ids}`;
    this.push({ type, id });
    return id;
  }

  #closeText(): void {
    if (this.#text !== undefined) this.push({ type: "text-end", id: this.#text });
    this.#text = undefined;
  }

  #closeReasoning(): void {
    if (this.#reasoning !== undefined) this.push({ type: "reasoning-end", id: this.#reasoning });
    this.#reasoning = undefined;
  }
}
