import {
  type Executor,
  InvalidInput,
  InvalidToolArgs,
  type RunVersion,
  ToolFailed,
  type ToolRegistry,
} from "@durable/core";
import { faultPoint } from "@durable/core/internal";
import {
  type CallOutcome,
  type CallRecord,
  canonicalCopy,
  inSpan,
  isJsonObject,
  type JsonObject,
  type RunProgram,
  type StepContext,
  type StepOutcome,
} from "@durable/core/runner";
import { withLoopCall } from "./call-context.js";
import { loopDataJson, readLoopData, type LoopData, type LoopStep, type StopReason } from "./loop-data.js";
import { loopResult, stepResults, type LoopAwaitingUser, type LoopDone } from "./loop-result.js";
import { readMessage, type Message } from "./message.js";
import type { LoopModel, ModelReply, ToolSpec } from "./model.js";
import { partSink, type PartSink } from "./stream-parts.js";
import { toolSpecs } from "./tool-specs.js";
import { errorAnswer, type ToolAnswer, valueAnswer } from "./tool-answer.js";
import { readUsage } from "./usage.js";
import type { WaitTool } from "./wait-tool.js";

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
  readonly version: RunVersion | undefined;
  readonly model: LoopModel;
  readonly registry: ToolRegistry;
  readonly executor: Executor;
  /** A tool's error goes to the model (`toolErrors: "model"`), or fails the run. */
  readonly errorsToModel: boolean;
  /** The tools the loop makes itself, whose calls wait (`sleepTool`, `eventTools`), by name. */
  readonly waitTools: ReadonlyMap<string, WaitTool>;
  readonly stopWhen: readonly LoopStopCondition[];
  /** Where stream parts go, and whether a claim of the run is a recovery (a resume is not). */
  readonly sink: PartSink;
  readonly recovering: boolean;
}

/** The tool loop as a program on core's run driver: one step is a model reply, or the tool round of the last reply. */
export function loopProgram(init: LoopProgramInit): RunProgram<LoopData, LoopDone | LoopAwaitingUser> {
  const specs = [...toolSpecs(init.registry), ...[...init.waitTools.values()].map((tool) => tool.spec)];
  return {
    kind: "loop",
    name: init.name,
    version: init.version,
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
  { log, round, runId, scope, stream }: StepContext,
): Promise<StepOutcome<LoopData>> {
  if (data.modelCalls - data.turnStart >= data.maxSteps) return stopTurn(data, "max-steps", false);
  if (data.stage === "tool-results" && (await stopConditionHolds(init.stopWhen, data)))
    return stopTurn(data, "stop-condition", false);
  const modelCall = data.modelCalls + 1;
  // Stored before the model is asked, so maxSteps bounds the calls made, crashes included.
  await log.append({ round, callId: `model:${modelCall}`, tool: "model", kind: "model", args: null });
  faultPoint("model.before-call");
  const sink = partSink(init.sink, stream);
  sink?.({ type: "step-start", runId, round, modelCall });
  const signal = scope.init.signal;
  // The model call's span is active while it runs: an AI SDK call's own telemetry spans are its children.
  const attributes = { "durable.run.id": runId, "durable.run.round": round, "durable.model.call": modelCall };
  const reply = await inSpan("durable.model", attributes, () =>
    init.model.reply(data.messages, specs, {
      ...(signal === undefined ? {} : { signal }),
      ...(sink === undefined ? {} : { onPart: sink }),
    }),
  );
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
  const { scope, runId, round, stream } = context;
  const last = data.messages.at(-1);
  const calls = last?.role === "assistant" ? (last.toolCalls ?? []) : [];
  const round$ = Promise.all(
    calls.map(async (call, index): Promise<Message | undefined> => {
      const reply = (answer: ToolAnswer): Message => {
        const message: Message = {
          role: "tool",
          toolCallId: call.id,
          name: call.name,
          ...answer,
          // The results of one round are one message to a provider that groups them (the AI SDK does).
          ...(index > 0 ? { joined: true } : {}),
        };
        sink?.({ type: "tool-result", runId, round, message });
        return message;
      };
      const waiting = init.waitTools.get(call.name);
      if (waiting !== undefined) {
        const answer = await waiting.answer(executor, scope, call);
        return answer === undefined ? undefined : reply(answer);
      }
      if (!executor.registry.has(call.name))
        return reply(errorAnswer(`there is no tool named ${JSON.stringify(call.name)}`));
      let outcome: CallOutcome;
      try {
        outcome = await withLoopCall({ toolCallId: call.id, messages: data.messages }, () =>
          executor.call(scope, call.id, call.name, call.args),
        );
      } catch (error) {
        // Arguments the tool's schema refuses: nothing ran or was recorded, and the model is told why.
        if (error instanceof InvalidToolArgs) return reply(errorAnswer(error.message));
        throw error;
      }
      switch (outcome.status) {
        case "pending":
          return undefined;
        case "denied":
          return reply({ content: `denied${outcome.reason === undefined ? "" : `: ${outcome.reason}`}` });
        case "error":
          if (!errorsToModel)
            throw new ToolFailed(call.name, outcome.error, outcome.attempts, { cause: outcome.cause });
          return reply(errorAnswer(outcome.error));
        case "ok":
          return reply(valueAnswer(outcome.value));
      }
    }),
  );
  let results: Awaited<typeof round$>;
  try {
    results = await round$;
  } finally {
    await scope.settled(); // a call left running when another threw lands first
  }
  // A call waiting on an approval pauses the round; a wait not over (a sleep, an event; no such call) sleeps it.
  if (!results.every((result) => result !== undefined))
    return scope.pending.length === 0 && scope.asleep !== undefined
      ? { next: "sleep", until: scope.asleep }
      : { next: "pause" };
  // The run's stream takes the round's results once it is over, as they are saved: a round that paused or slept
  // runs again, its finished calls replayed, and would give them again.
  for (const message of results) stream?.write({ type: "tool-result", round, message } as unknown as JsonObject);
  return {
    next: "step",
    data: { ...data, messages: [...data.messages, ...results], stage: "tool-results" },
    roundOver: true,
  };
}
