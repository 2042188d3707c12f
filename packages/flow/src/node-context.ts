import { ApprovalDenied, type Executor, type JsonValue, ToolFailed } from "@durable/core";
import { type CallScope, checkOptions, type EventWait, type OptionTable, type WaitOptions } from "@durable/core/runner";
import { type ChildOptions, ChildRunFailed, type ChildRuns } from "./children.js";
import type { Flow, NodeContext } from "./flow.js";

/** Thrown inside a node when a call waits on an approval (the superstep pauses), or a sleep, a wait or a child has not ended (it sleeps). */
export class Stopped extends Error {}

const CHILD_OPTIONS: OptionTable<ChildOptions> = { runId: "string", detached: "boolean" };

/**
 * What a node's code gets: its calls, sleeps, waits, patches and child runs, each
 * through the call log `within` the node's name. Once a sleep, a wait or a
 * child stopped the node, its later ones stop it too, even where its code
 * caught the stop: they wait for the wake.
 */
export function nodeContext(
  within: string,
  executor: Executor,
  scope: CallScope,
  children: ChildRuns,
): { ctx: NodeContext; call: NodeContext["call"] } {
  let stopped = false;
  const stop = (why: string): never => {
    stopped = true;
    throw new Stopped(why);
  };
  const call = async <T = JsonValue>(tool: string, args: JsonValue): Promise<T> => {
    if (stopped) throw new Stopped("the node waits");
    const outcome = await executor.call(scope, within, tool, args);
    switch (outcome.status) {
      case "ok":
        return outcome.value as T;
      case "pending":
        throw new Stopped("the call waits on an approval");
      case "denied":
        throw new ApprovalDenied(tool, outcome.reason);
      case "error": // recorded: the node sees the same error on every worker, its cause only where it happened
        throw new ToolFailed(tool, outcome.error, outcome.attempts, { cause: outcome.cause });
    }
  };
  const sleep = async (wake: { ms: number } | { until: number | Date }): Promise<void> => {
    if (stopped || !(await executor.sleep(scope, within, wake)).passed) stop("the node sleeps");
  };
  const waitForEvent = async (name: string, options?: WaitOptions): Promise<EventWait> => {
    const got = stopped ? undefined : await executor.waitForEvent(scope, within, name, options);
    return got ?? stop("the node waits for an event");
  };
  const startChild = async (flow: Flow<unknown>, input: unknown, options: ChildOptions = {}): Promise<unknown> => {
    checkOptions("startChild", options, CHILD_OPTIONS);
    if (stopped) stop("the node waits");
    const start = await children.prepare(flow, input);
    const runId = await executor.startChild(scope, within, {
      ...start,
      runId: options.runId,
      detached: options.detached,
    });
    if (options.detached === true) return { runId };
    const end =
      (await executor.awaitChild(scope, within, runId, start.retell)) ?? stop("the node waits for a child run");
    if (end.status === "failed") throw new ChildRunFailed(runId, end.error);
    return children.output(flow, end.output);
  };
  const patched = async (id: string): Promise<boolean> => {
    if (stopped) stop("the node waits");
    return executor.patched(scope, within, id);
  };
  const ctx: NodeContext = {
    ...scope.init.identity,
    runId: scope.runId,
    call,
    sleep: (ms) => sleep({ ms }),
    sleepUntil: (until) => sleep({ until }),
    patched,
    waitForEvent,
    startChild: startChild as NodeContext["startChild"],
  };
  return { ctx, call };
}
