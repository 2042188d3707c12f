import { AsyncLocalStorage } from "node:async_hooks";
import type { Message } from "./message.js";

/** What a tool of a loop may know of the call besides its arguments: the model's id for it, and the history it was asked in. */
export interface LoopCallContext {
  /** The model's tool-call id. */
  readonly toolCallId: string;
  /** The history up to and including the reply that asked for the call. */
  readonly messages: readonly Message[];
}

const current = new AsyncLocalStorage<LoopCallContext>();

/** Runs `work` (one call of a tool round) with its context, for `loopCallContext()` inside the tool. */
export function withLoopCall<T>(context: LoopCallContext, work: () => T): T {
  return current.run(context, work);
}

/** Inside a tool that a tool loop runs: the call's context (the AI SDK adapter hands it to `execute`); else undefined. */
export function loopCallContext(): LoopCallContext | undefined {
  return current.getStore();
}
