import { InvalidInput, newRunId, RunHandle, type RunHandleOptions, type ToolRegistry } from "@durable/core";
import { queuePlace } from "@durable/core/runner";
import { readInputMessages } from "./check-args.js";
import { readLoopData } from "./loop-data.js";
import type { StartToolLoopOptions } from "./loop-options.js";
import { loopResult, type LoopAwaitingUser, type LoopDone } from "./loop-result.js";
import type { Message } from "./message.js";
import type { LoopModel } from "./model.js";
import { firstLoopData, loopDriver, readMaxSteps } from "./tool-loop.js";

/**
 * Starts a tool loop without driving it: saves it queued and returns its
 * handle at once; a worker serving the loops of its name
 * (`servedToolLoops(model, registry, { name })`) claims it. A run id that
 * exists already gives that run's handle when it is a loop of this name
 * (see `ifExists`), else `CheckpointConflict`.
 */
export async function startToolLoop(
  model: LoopModel,
  registry: ToolRegistry,
  messages: readonly Message[],
  options: StartToolLoopOptions,
): Promise<RunHandle<LoopDone | LoopAwaitingUser>> {
  const where = "startToolLoop";
  const driver = loopDriver(where, model, registry, options, undefined);
  const history = readInputMessages(where, messages);
  const maxSteps = readMaxSteps(where, options.maxSteps);
  const { ifExists, ctx } = options;
  if (ifExists !== undefined && ifExists !== "handle" && ifExists !== "error")
    throw new InvalidInput(`${where}: ifExists must be "handle" or "error", not ${JSON.stringify(ifExists)}.`);
  const queue = queuePlace(where, options);
  const runId = options.runId ?? newRunId();
  await driver.submit(firstLoopData(history, maxSteps, options.conversation), { runId, ctx, ifExists, queue });
  const { checkpoints, checkpointKey, encryptionKey, anchor } = options;
  return toolLoopHandle({ checkpoints, checkpointKey, encryptionKey, anchor }, runId);
}

/**
 * A handle on tool loop `runId` (`RunHandle`) anywhere the store and the key
 * are: its result is the loop's, as `runToolLoop` gives it once done.
 */
export function toolLoopHandle(options: RunHandleOptions, runId: string): RunHandle<LoopDone | LoopAwaitingUser> {
  return new RunHandle(options, runId, (stored, at) => loopResult(readLoopData(at.runId, stored), at));
}
