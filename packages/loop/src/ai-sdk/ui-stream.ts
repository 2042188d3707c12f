import type { UIMessageChunk } from "ai";
import { errorText } from "@durable/core/runner";
import type { LoopStreamPart } from "../stream-parts.js";

/** What the `data-durable` part of a UI message stream says: where the run stands, each time a worker takes it up. */
export interface DurableRunData {
  readonly runId: string;
  /** True after a crash: the parts of a step that was cut off are void, and the step runs again. */
  readonly recovered: boolean;
  /** How many messages the saved history holds. */
  readonly messages: number;
}

type Chunk = UIMessageChunk<unknown, { durable: DurableRunData }>;

/**
 * A streaming loop's parts as the AI SDK's UI message stream (for
 * `createUIMessageStreamResponse({ stream })` in a route, read by `useChat`):
 * each model call is a step with its text, reasoning and tool calls, then its
 * tool results; each time a worker takes the run up a `data-durable` part says
 * so (`recovered` after a crash: drop the cut-off step's parts). A run that
 * fails ends with an `error` part.
 */
export function toUIMessageStream(parts: AsyncIterable<LoopStreamPart>): ReadableStream<Chunk> {
  return new ReadableStream<Chunk>({
    async start(controller) {
      const ui = new UIChunks((chunk) => controller.enqueue(chunk));
      ui.push({ type: "start" });
      try {
        for await (const part of parts) ui.part(part);
        ui.endStep();
        ui.push({ type: "finish" });
      } catch (error) {
        ui.endStep();
        ui.push({ type: "error", errorText: errorText(error) });
      }
      controller.close();
    },
  });
}

/** Turns loop parts into UI chunks, keeping which text, reasoning and step are open. */
class UIChunks {
  readonly push: (chunk: Chunk) => void;
  #step = false;
  #text: string | undefined;
  #reasoning: string | undefined;
  #ids = 0;
  /** Whether the model streamed this step's text and tool calls (a model that does not gives them whole at its end). */
  #streamed = { text: false, calls: new Set<string>() };

  constructor(push: (chunk: Chunk) => void) {
    this.push = push;
  }

  part(part: LoopStreamPart): void {
    switch (part.type) {
      case "run-start":
        this.endStep();
        this.push({
          type: "data-durable",
          data: { runId: part.runId, recovered: part.recovered, messages: part.messages.length },
        });
        break;
      case "step-start":
        this.endStep();
        this.#step = true;
        this.#streamed = { text: false, calls: new Set() };
        this.push({ type: "start-step" });
        break;
      case "text-delta":
        this.#streamed.text = true;
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
        this.#streamed.calls.add(part.toolCallId);
        this.push({
          type: "tool-input-available",
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          input: part.args,
        });
        break;
      case "step-finish": {
        const { message } = part;
        if (!this.#streamed.text && message.content !== "") this.#textDelta(message.content);
        this.#closeText();
        this.#closeReasoning();
        if (message.role === "assistant")
          for (const call of message.toolCalls ?? [])
            if (!this.#streamed.calls.has(call.id))
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
