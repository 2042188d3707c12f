export {
  Flow,
  type FlowOptions,
  type NodeOptions,
  type EdgeOptions,
  type FlowNode,
  type NodeFn,
  type NodeContext,
  type WorkflowOf,
  type Router,
  type Reducers,
  type Graph,
  type Join,
  type Successors,
} from "./flow.js";
export { Call, type CallOptions } from "./call.js";
export { workflow, Workflow, type WorkflowFn, type WorkflowOptions, type WorkflowState } from "./workflow.js";
export { FlowError } from "./flow-error.js";
export { ChildRunFailed, type ChildOptions } from "./children.js";
export {
  FlowRunner,
  type FlowResult,
  type FlowDone,
  type FlowRunnerOptions,
  type MigrateOptions,
  type RunOptions,
  type StartOptions,
  type CancelOptions,
} from "./runner.js";
export type { ApprovalAnswers, PendingCall, PausedResult, RecoverOptions, RunHandle } from "@durable/core";
export type { AsleepResult, EventWait, WaitOptions } from "@durable/core/runner";
export type { FlowData } from "./flow-data.js";
export type { ForkFlowOptions } from "./fork.js";
