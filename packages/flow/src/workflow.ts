import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { RunVersion } from "@durable/core";
import { checkOptions, isStandardSchema, type OptionTable } from "@durable/core/runner";
import { Flow, type NodeContext, type WorkflowState } from "./flow.js";

export type { WorkflowState } from "./flow.js";
import { FlowError } from "./flow-error.js";

/**
 * A workflow's body: ordinary async code over its context and input. Like a
 * node's, it must be deterministic given the results of its calls and waits:
 * on recovery, and each time it wakes from a sleep or a wait, it runs again
 * from the top, its finished calls and waits replayed by identity.
 */
export type WorkflowFn<I, O> = (ctx: NodeContext, input: I) => O | Promise<O>;

/** Options of `workflow`. */
export interface WorkflowOptions<I> {
  /** Any Standard Schema (zod, valibot, arktype): a run's input is validated with it when it starts. */
  readonly input: StandardSchemaV1<unknown, I>;
  /** The version of this workflow's code: as a flow's (`FlowOptions.version`). */
  readonly version?: RunVersion;
}

const WORKFLOW_OPTIONS: OptionTable<WorkflowOptions<unknown>> = { input: true, version: true };

/** The one node a workflow is: its whole function. */
const BODY = "body";

/**
 * A workflow written as one async function (`workflow`): a flow of one node
 * whose body is the function, so it is run, recovered, served by
 * `startWorker` and shown in the console as a flow is, with the same call
 * identity, replay, in-doubt and approval rules. Its state is
 * `{ input, output? }`: `run(workflow, input)` starts it from the input
 * alone, and a done run's `state.output` is what the function returned.
 */
export class Workflow<I, O> extends Flow<WorkflowState<I, O>> {
  /** Marks a workflow, for the types that give its output rather than its state (`startChild`). */
  readonly workflow = true as const;

  constructor(name: string, options: WorkflowOptions<I>, fn: WorkflowFn<I, O>) {
    checkOptions(`workflow ${JSON.stringify(name)}`, options, WORKFLOW_OPTIONS);
    if (!isStandardSchema(options.input))
      throw new FlowError(`workflow ${JSON.stringify(name)}: input must be a Standard Schema (zod, valibot, arktype).`);
    if (typeof fn !== "function") throw new FlowError(`workflow ${JSON.stringify(name)} needs its function.`);
    super(name, { state: workflowState<I, O>(options.input), version: options.version });
    super.node(BODY, async (state, ctx) => {
      const output = await fn(ctx, state.input);
      return output === undefined ? {} : { output };
    });
    super.end(BODY);
  }

  /** A run starts from `{ input }`. */
  override initialState(input: unknown): unknown {
    return { input };
  }

  override node(): this {
    return this.#refuse();
  }

  override edge(): this {
    return this.#refuse();
  }

  override end(): this {
    return this.#refuse();
  }

  #refuse(): never {
    throw new FlowError(`workflow ${JSON.stringify(this.name)} is one function: it takes no nodes or edges.`);
  }
}

/**
 * A workflow written as a plain async function, beside `Flow` for
 * business logic that branches:
 *
 * ```ts
 * const refund = workflow("refund", { input: Refund }, async (ctx, { orderId }) => {
 *   const quote = await ctx.call<number>("fetch_quote", { orderId });
 *   if (quote > 500) await ctx.waitForEvent("manager-approval", { timeoutMs: DAY });
 *   return ctx.call<string>("issue_refund", { orderId, cents: quote });
 * });
 * ```
 */
export function workflow<I, O>(name: string, options: WorkflowOptions<I>, fn: WorkflowFn<I, O>): Workflow<I, O> {
  return new Workflow(name, options, fn);
}

/** The state schema of a workflow: `{ input, output? }`, its input checked by the workflow's input schema. */
function workflowState<I, O>(input: StandardSchemaV1<unknown, I>): StandardSchemaV1<unknown, WorkflowState<I, O>> {
  type Result = StandardSchemaV1.Result<WorkflowState<I, O>>;
  return {
    "~standard": {
      version: 1,
      vendor: "@durable/flow",
      validate(value: unknown): Result | Promise<Result> {
        const fields = typeof value === "object" && value !== null && !Array.isArray(value) ? Object.keys(value) : [];
        if (!fields.includes("input") || fields.some((field) => field !== "input" && field !== "output"))
          return { issues: [{ message: "a workflow's state is { input, output? }" }] };
        const { output } = value as { output?: O };
        const checked = (result: StandardSchemaV1.Result<I>): Result =>
          result.issues === undefined
            ? { value: { input: result.value, ...(fields.includes("output") ? { output: output as O } : {}) } }
            : { issues: result.issues.map((issue) => ({ ...issue, path: ["input", ...(issue.path ?? [])] })) };
        const result = input["~standard"].validate((value as { input: unknown }).input);
        return result instanceof Promise ? result.then(checked) : checked(result);
      },
    },
  };
}
