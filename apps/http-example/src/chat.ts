import { type CheckpointStore, type EventSink, ToolRegistry } from "@durable/core";
import { type LoopSnapshot, type LoopStoreOptions, readToolLoop, servedToolLoops, startToolLoop } from "@durable/loop";
import { resumeStreamResponse } from "@durable/loop/ai-sdk";
import { scriptedChatModel } from "./chat-model.js";
import { KEY } from "./key.js";

/** What `look_up` answers: a stand-in for a search, the same for every question (so it may run again). */
const FOUND = "a durable stream keeps every part a worker wrote, numbered, in the store";

/**
 * The chats: tool loops on the store every process shares, each run one
 * question and its streamed answer. The server starts them on the fleet and
 * serves their streams; the workers drive them, writing each run's stream to
 * the store as they go (`stream: true`), so any server process follows a chat
 * whichever worker drives it, across a takeover.
 */
export class Chats {
  readonly #options: LoopStoreOptions;
  readonly #tools = new ToolRegistry().tool(
    "look_up",
    (args: { question: string }) => ({ question: args.question, found: FOUND }),
    {
      idempotent: true,
      description: "Looks a question up",
    },
  );

  constructor(store: CheckpointStore) {
    this.#options = { checkpoints: store, checkpointKey: KEY, name: "chat", stream: true };
  }

  /** Starts a chat on the fleet (saved queued, a worker takes it): its run id. */
  async start(question: string): Promise<string> {
    const handle = await startToolLoop(scriptedChatModel, this.#tools, [{ role: "user", content: question }], {
      ...this.#options,
      maxSteps: 4,
    });
    return handle.runId;
  }

  /** The chat as saved: its messages, and `streamed`, the offset its stream goes on from after them. */
  read(runId: string): Promise<LoopSnapshot> {
    return readToolLoop(runId, this.#options);
  }

  /** The chat's stream from an offset on, as a route answers it (SSE; 204 when nothing more comes). */
  stream(runId: string, where: { from?: number; lastEventId?: string; signal: AbortSignal }): Promise<Response> {
    return resumeStreamResponse(runId, { ...this.#options, ...where });
  }

  /**
   * The chats as a worker serves them: `leaseMs`, how soon another worker
   * takes over a chat whose worker died; `events`, what the worker's drives
   * of chats tell (`run.recovered` each time one takes a chat up).
   */
  served(leaseMs: number, events: EventSink) {
    return servedToolLoops(scriptedChatModel, this.#tools, { ...this.#options, lease: { ms: leaseMs }, events });
  }
}
