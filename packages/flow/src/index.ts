export { Flow, type FlowOptions, type FlowNode, type NodeFn, type NodeContext, type Router, type Reducers, type Graph, type Join, type Successors } from "./flow.js";
export { Call, type CallOptions } from "./call.js";
export { FlowRunner, type FlowResult, type FlowRunnerOptions, type RunOptions, type RecoverOptions } from "./runner.js";
export type { Decisions } from "@durable/core";
export type { Approval, FlowData } from "./flow-data.js";
