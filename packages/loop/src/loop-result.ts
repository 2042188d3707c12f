import type { JsonObject } from "@durable/core/runner";
import type { JsonValue, PausedResult } from "@durable/core";
import type { AsleepResult } from "@durable/core/runner";
import type { LoopData, StopReason } from "./loop-data.js";
import type { Message } from "./message.js";
import { addUsage, type ModelUsage } from "./usage.js";

/**
 * One model reply of the run and what came of it, shaped as the AI SDK's
 * step results are (so its `stepCountIs`/`isStepCount` and `hasToolCall`
 * work as `stopWhen` conditions).
 */
export interface LoopStepResult {
  readonly text: string;
  readonly toolCalls: readonly { readonly toolCallId: string; readonly toolName: string; readonly input: JsonValue }[];
  /** The tool messages of its round; a round cut short by a pause has none yet. */
  readonly toolResults: readonly Message[];
  readonly usage?: ModelUsage;
  readonly finishReason?: string;
  readonly response?: JsonObject;
}

interface Finished {
  readonly runId: string;
  readonly step: number;
  readonly messages: readonly Message[];
  /** The model's last text. */
  readonly text: string;
  /** Why the last turn stopped: a final answer, `maxSteps`, or a `stopWhen` condition. */
  readonly stopped: StopReason;
  /** Every model reply of the run, across turns and recoveries. */
  readonly steps: readonly LoopStepResult[];
  /** The usage of every saved reply, summed (a call cut off by a crash was never saved: its tokens are not known). */
  readonly usage: ModelUsage;
  /** The last reply's finish reason and response metadata. */
  readonly finishReason?: string;
  readonly response?: JsonObject;
  /** The turn this result ends, from 1 (a one-turn run: 1). */
  readonly turn: number;
}

/** A tool loop that is done. */
export interface LoopDone extends Finished {
  readonly status: "done";
}

/** A conversation whose turn is over: it waits for the next user message (`runToolLoop` with its `runId`). */
export interface LoopAwaitingUser extends Finished {
  readonly status: "awaiting-user";
}

/** Where a tool loop stands when it returns. */
export type LoopResult = LoopDone | LoopAwaitingUser | PausedResult | AsleepResult;

/** The step results of a loop's data. */
export function stepResults(data: LoopData): LoopStepResult[] {
  return data.steps.map(({ message, usage, finishReason, response }, index) => {
    const reply = data.messages[message];
    const end = data.steps[index + 1]?.message ?? data.messages.length;
    const toolResults = data.messages.slice(message + 1, end).filter((m) => m.role === "tool");
    return {
      text: reply?.content ?? "",
      toolCalls:
        reply?.role === "assistant"
          ? (reply.toolCalls ?? []).map(({ id, name, args }) => ({ toolCallId: id, toolName: name, input: args }))
          : [],
      toolResults,
      ...(usage === undefined ? {} : { usage }),
      ...(finishReason === undefined ? {} : { finishReason }),
      ...(response === undefined ? {} : { response }),
    };
  });
}

/** The result of a loop whose turn stopped: done, or (a conversation) awaiting the next user message. */
export function loopResult(
  data: LoopData,
  at: { readonly runId: string; readonly step: number },
): LoopDone | LoopAwaitingUser {
  const steps = stepResults(data);
  const lastStep = steps.at(-1);
  const last = data.messages.findLast((m) => m.role === "assistant");
  return {
    status: data.conversation ? "awaiting-user" : "done",
    runId: at.runId,
    step: at.step,
    messages: data.messages,
    text: last?.content ?? "",
    stopped: data.stopped ?? "final",
    steps,
    usage: addUsage(steps.map((s) => s.usage)),
    ...(lastStep?.finishReason === undefined ? {} : { finishReason: lastStep.finishReason }),
    ...(lastStep?.response === undefined ? {} : { response: lastStep.response }),
    turn: data.turn,
  };
}
