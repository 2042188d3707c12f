import type { JsonValue } from "@durable/core";
import type { ChildStart } from "@durable/core/runner";
import { FlowError } from "./flow-error.js";
import type { Flow } from "./flow.js";

export type { ChildOptions } from "./flow.js";

/** How a flow runner starts the child runs of its nodes: each child flow's driver, and the runner's codec. */
export interface ChildRuns {
  /** The child's input settled by its schema as stored, and how its step 0 is saved. */
  prepare(child: Flow<unknown>, input: unknown): Promise<Omit<ChildStart, "runId" | "detached">>;
  /** What a done child gave back, decoded: a flow's state, a workflow's output. */
  output(child: Flow<unknown>, output: JsonValue): unknown;
}

/** A child run a node waited for failed (or was cancelled): the node's `await ctx.startChild(…)` rejects with it. */
export class ChildRunFailed extends FlowError {
  readonly childRunId: string;
  /** The child's error, as text. */
  readonly error: string;

  constructor(childRunId: string, error: string) {
    super(`Child run ${JSON.stringify(childRunId)} failed: ${error}`);
    this.childRunId = childRunId;
    this.error = error;
  }
}
