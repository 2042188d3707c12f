import { setTimeout as sleep } from "node:timers/promises";
import type { LoopModel, Message, ModelReply } from "@durable/loop";

/**
 * The example's stand-in for an LLM (it runs with no network and no key):
 * a `LoopModel` that answers every question with the same script, word by
 * word, as a provider streams. Its first reply says it looks the question up
 * and calls `look_up` (an idempotent tool); once the tool's result is in the
 * history, it answers. Put `aiSdkModel(openai("…"))` from
 * `@durable/loop/ai-sdk` in its place for a real model.
 */
export const CHAT_SCRIPT = {
  lookUp: "Let me look that up. ",
  answer:
    "Here is what I found: every part of this reply is kept in the store with its offset, " +
    "so a page that reloads or a connection that drops picks up where it left off, " +
    "and when the worker writing it dies mid-sentence another worker takes the chat over and says it again.",
} as const;

/** The whole text the stand-in says to any question: what a client ends with. */
export const CHAT_REPLY_TEXT = CHAT_SCRIPT.lookUp + CHAT_SCRIPT.answer;

/** How long the stand-in takes per word, in ms: slow enough to watch, and to cut off. */
const WORD_MS = 50;

export const scriptedChatModel: LoopModel = {
  async reply(messages, _tools, options = {}) {
    const { onPart, signal } = options;
    const looked = messages.at(-1)?.role === "tool";
    const reply: ModelReply = looked
      ? { text: CHAT_SCRIPT.answer, toolCalls: [] }
      : {
          text: CHAT_SCRIPT.lookUp,
          toolCalls: [{ id: "look-up-1", name: "look_up", args: { question: lastQuestion(messages) } }],
        };
    // Without `onPart` the caller does not stream: the reply comes whole, at once.
    if (onPart === undefined) return reply;
    for (const word of reply.text.split(/(?<= )/)) {
      await sleep(WORD_MS, undefined, { signal });
      onPart({ type: "text-delta", text: word });
    }
    for (const call of reply.toolCalls)
      onPart({ type: "tool-call", toolCallId: call.id, toolName: call.name, args: call.args });
    return reply;
  },
};

function lastQuestion(messages: readonly Message[]): string {
  return messages.findLast((message) => message.role === "user")?.content ?? "";
}
