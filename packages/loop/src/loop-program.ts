import {
  type Executor,
  InvalidInput,
  InvalidToolArgs,
  type JsonValue,
  ToolFailed,
  type ToolRegistry,
} from "@durable/core";
import { faultPoint } from "@durable/core/internal";
import {
  type CallOutcome,
  type CallRecord,
  type CallScope,
  canonicalCopy,
  isJsonObject,
  type RunProgram,
  type StepContext,
  type StepOutcome,
} from "@durable/core/runner";
import { withLoopCall } from "./call-context.js";
import { loopDataJson, readLoopData, type LoopData, type LoopStep, type StopReason } from "./loop-data.js";
import { loopResult, stepResults, type LoopAwaitingUser, type LoopDone } from "./loop-result.js";
import { readMessage, type Message } from "./message.js";
import type { LoopModel, ModelReply, ToolSpec } from "./model.js";
import type { PartSink } from "./stream-parts.js";
import { toolSpecs } from "./tool-specs.js";
import { sleepToolSpec, sleepWake, sleptText } from "./sleep-tool.js";
import { readUsage } from "./usage.js";

/** What a stop condition reads of each step of the turn (a `LoopStepResult`, which has more). */
export interface StopStep {
  readonly text: string;
  readonly toolCalls: readonly { readonly toolCallId: string; readonly toolName: string; readonly input: unknown }[];
  readonly finishReason?: string;
}

/**
 * A condition that ends a turn before the model is asked again, checked after
 * each tool round with the turn's steps so far (AI SDK's `stepCountIs` and
 * `hasToolCall` are such conditions). It must decide from the steps alone, the
 * same on every worker: a recovery checks it again.
 */
export type LoopStopCondition = {
  // Checked as a method (its parameter bivariant), so the AI SDK's conditions, typed for its own step
  // results, of which they read only what `StopStep` has, are accepted as they are.
  check(options: { readonly steps: readonly StopStep[] }): boolean | PromiseLike<boolean>;
}["check"];

/** What a loop program is made of. */
export interface LoopProgramInit {
  readonly name: string;
  readonly model: LoopModel;
  readonly registry: ToolRegistry;
  readonly executor: Executor;
  /** A tool's error goes to the model (`toolErrors: "model"`), or fails the run. */
  readonly errorsToModel: boolean;
  /** The name of the tool that sleeps (`sleepTool`), if the model is given one. */
  readonly sleepTool?: string | undefined;
  readonly stopWhen: readonly LoopStopCondition[];
  /** Where stream parts go, and whether a claim of the run is a recovery (a resume is not). */
  readonly sink: PartSink;
  readonly recovering: boolean;
}

/** The tool loop as a program on core's run driver: one step is a model reply, or the tool round of the last reply. */
export function loopProgram(init: LoopProgramInit): RunProgram<LoopData, LoopDone | LoopAwaitingUser> {
  const specs = [...toolSpecs(init.registry), ...(init.sleepTool === undefined ? [] : [sleepToolSpec(init.sleepTool)])];
  return {
    kind: "loop",
    name: init.name,
    registry: init.registry,
    read: readLoopData,
    write: loopDataJson,
    claimed: (data, records, runId) => {
      init.sink?.({ type: "run-start", runId, recovered: init.recovering, messages: data.messages });
      return withModelCalls(data, records);
    },
    step: (data, context) =>
      data.stage === "model-reply" ? toolRound(init, data, context) : modelReply(init, specs, data, context),
    result: loopResult,
    saved: (data) => ({ stage: data.stage }),
  };
}

/**
 * The loop's data with every model call the log records counted: a worker
 * that died while the model answered made a call its checkpoint never saw.
 */
function withModelCalls(data: LoopData, records: readonly CallRecord[]): LoopData {
  // Model calls are numbered (`model:<n>`): the recovery reads only the round's records, not the run's first calls.
  const made = records.reduce(
    (most, record) => (record.kind === "model" ? Math.max(most, Number(record.callId.slice(6)) || 0) : most),
    0,
  );
  return made > data.modelCalls ? { ...data, modelCalls: made } : data;
}

/** A stopped turn: a conversation waits for its next message, any other run is done. */
function stopTurn(data: LoopData, stopped: StopReason, roundOver: boolean): StepOutcome<LoopData> {
  const next = { ...data, stopped };
  return data.conversation ? { next: "wait", data: next, roundOver } : { next: "done", data: next, roundOver: false };
}

/** Asks the model for its next reply, which opens the round; a reply with no tool call ends the turn, as do `maxSteps` and `stopWhen`. */
async function modelReply(
  init: LoopProgramInit,
  specs: readonly ToolSpec[],
  data: LoopData,
  { log, round, runId, scope }: StepContext,
): Promise<StepOutcome<LoopData>> {
  if (data.modelCalls - data.turnStart >= data.maxSteps) return stopTurn(data, "max-steps", false);
  if (data.stage === "tool-results" && (await stopConditionHolds(init.stopWhen, data)))
    return stopTurn(data, "stop-condition", false);
  const modelCall = data.modelCalls + 1;
  // Stored before the model is asked, so maxSteps bounds the calls made, crashes included.
  await log.append({ round, callId: `model:${modelCall}`, tool: "model", kind: "model", args: null });
  faultPoint("model.before-call");
  const { sink } = init;
  sink?.({ type: "step-start", runId, round, modelCall });
  const signal = scope.init.signal;
  const reply = await init.model.reply(data.messages, specs, {
    ...(signal === undefined ? {} : { signal }),
    ...(sink === undefined ? {} : { onPart: sink }),
  });
  const message = pinned(reply);
  const step = stepOf(reply, data.messages.length, data.turn);
  sink?.({ type: "step-finish", runId, round, message, ...stepInfo(step) });
  const next: LoopData = {
    ...data,
    messages: [...data.messages, message],
    modelCalls: modelCall,
    stage: "model-reply",
    steps: [...data.steps, step],
  };
  if (message.role !== "assistant" || message.toolCalls === undefined) return stopTurn(next, "final", true);
  return { next: "step", data: next, roundOver: false };
}

async function stopConditionHolds(conditions: readonly LoopStopCondition[], data: LoopData): Promise<boolean> {
  if (conditions.length === 0) return false;
  const all = stepResults(data);
  const steps = all.filter((_, index) => data.steps[index]?.turn === data.turn);
  for (const condition of conditions) if (await condition({ steps })) return true;
  return false;
}

/** The model's reply as the history keeps it (plain JSON, as replay gives it); a reply of another shape is `InvalidInput`. */
function pinned(reply: ModelReply): Message {
  const calls: unknown = reply?.toolCalls;
  const said = {
    role: "assistant",
    content: reply?.text,
    ...(Array.isArray(calls) && calls.length > 0 ? { toolCalls: calls } : {}),
    ...(reply?.parts === undefined ? {} : { parts: reply.parts }),
    ...(reply?.providerOptions === undefined ? {} : { providerOptions: reply.providerOptions }),
  };
  const message = Array.isArray(calls) ? readMessage(canonicalCopy(said, "the model's reply")) : undefined;
  if (message === undefined)
    throw new InvalidInput(
      "The model's reply must be { text: string, toolCalls: [{ id: string, name: string, args }], parts?: [{ type: string, … }], providerOptions?: {…} }.",
    );
  return message;
}

/** What the run keeps of a reply besides the message: its usage, finish reason and response metadata, as plain JSON. */
function stepOf(reply: ModelReply, message: number, turn: number): LoopStep {
  const usage = readUsage(canonicalCopy(reply.usage ?? null, "the model's usage"));
  const response = reply.response === undefined ? undefined : canonicalCopy(reply.response, "the model's response");
  const { finishReason } = reply;
  return {
    message,
    turn,
    ...(usage === undefined ? {} : { usage }),
    ...(typeof finishReason === "string" ? { finishReason } : {}),
    ...(isJsonObject(response) ? { response } : {}),
  };
}

function stepInfo({ usage, finishReason }: LoopStep): { usage?: LoopStep["usage"]; finishReason?: string } {
  return { ...(usage === undefined ? {} : { usage }), ...(finishReason === undefined ? {} : { finishReason }) };
}

/**
 * Runs the pinned tool calls of the last reply concurrently, each through the
 * call log; pauses when one waits on an approval. A denial, an unknown tool
 * and (with `toolErrors: "model"`) a tool's error go back to the model as the
 * call's result.
 */
async function toolRound(init: LoopProgramInit, data: LoopData, context: StepContext): Promise<StepOutcome<LoopData>> {
  const { executor, errorsToModel, sink } = init;
  const { scope, runId, round } = context;
  const last = data.messages.at(-1);
  const calls = last?.role === "assistant" ? (last.toolCalls ?? []) : [];
  const round$ = Promise.all(
    calls.map(async (call, index): Promise<Message | undefined> => {
      const reply = (content: string, extra: ToolMessageExtra = {}): Message => {
        const message: Message = {
          role: "tool",
          toolCallId: call.id,
          name: call.name,
          content,
          ...extra,
          // The results of one round are one message to a provider that groups them (the AI SDK does).
          ...(index > 0 ? { joined: true } : {}),
        };
        sink?.({ type: "tool-result", runId, round, message });
        return message;
      };
      if (call.name === init.sleepTool) return sleepCall(executor, scope, call, reply);
      if (!executor.registry.has(call.name))
        return reply(`error: there is no tool named ${JSON.stringify(call.name)}`, { isError: true });
      let outcome: CallOutcome;
      try {
        outcome = await withLoopCall({ toolCallId: call.id, messages: data.messages }, () =>
          executor.call(scope, call.id, call.name, call.args),
        );
      } catch (error) {
        // Arguments the tool's schema refuses: nothing ran or was recorded, and the model is told why.
        if (error instanceof InvalidToolArgs) return reply(`error: ${error.message}`, { isError: true });
        throw error;
      }
      switch (outcome.status) {
        case "pending":
          return undefined;
        case "denied":
          return reply(`denied${outcome.reason === undefined ? "" : `: ${outcome.reason}`}`);
        case "error":
          if (!errorsToModel)
            throw new ToolFailed(call.name, outcome.error, outcome.attempts, { cause: outcome.cause });
          return reply(`error: ${outcome.error}`, { isError: true });
        case "ok":
          return okReply(outcome.value, reply);
      }
    }),
  );
  let results: Awaited<typeof round$>;
  try {
    results = await round$;
  } finally {
    await scope.settled(); // a call left running when another threw lands first
  }
  // A call waiting on an approval pauses the round; a sleep that has not passed (and no such call) sleeps it.
  if (!results.every((result) => result !== undefined))
    return scope.pending.length === 0 && scope.asleep !== undefined
      ? { next: "sleep", until: scope.asleep }
      : { next: "pause" };
  return {
    next: "step",
    data: { ...data, messages: [...data.messages, ...results], stage: "tool-results" },
    roundOver: true,
  };
}

/**
 * A call of the sleep tool: its wait, made through the call log (recorded
 * once, replayed); the model is told when it slept, or why its arguments are
 * not a wait. Undefined while the wait has not passed: the round sleeps.
 */
async function sleepCall(
  executor: Executor,
  scope: CallScope,
  call: { readonly id: string; readonly name: string; readonly args: JsonValue },
  reply: (content: string, extra?: ToolMessageExtra) => Message,
): Promise<Message | undefined> {
  const wake = sleepWake(call.args);
  const asked = `error: ${call.name} takes { "seconds": <number ≥ 0> } or { "until": "<ISO 8601 time>" }`;
  if (wake === undefined) return reply(asked, { isError: true });
  try {
    const { until, passed } = await executor.sleep(scope, call.id, wake);
    return passed ? reply(sleptText(until)) : undefined;
  } catch (error) {
    // A wait further ahead than a sleep may be: nothing was recorded, and the model is told.
    if (error instanceof InvalidInput) return reply(`error: ${error.message}`, { isError: true });
    throw error;
  }
}

interface ToolMessageExtra {
  readonly isError?: true;
  readonly result?: JsonValue;
}

/** A tool's result as the model gets it: a string as it is, anything else as JSON (kept as `result` too). */
function okReply(value: unknown, reply: (content: string, extra?: ToolMessageExtra) => Message): Message {
  if (typeof value === "string") return reply(value);
  // A codec's decoded value (a Date, a Map) reaches the model as its JSON text, the same on replay.
  const text = JSON.stringify(value === undefined ? null : value);
  return reply(text, { result: JSON.parse(text) as JsonValue });
}
