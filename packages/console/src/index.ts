// `@durable/console`: the run console as a library (the `durable-console` bin serves it).
export { startConsole, type ConsoleOptions, type RunningConsole } from "./server.js";
export { openStoreUrl, type StoreUrlOptions } from "./open-store.js";
export {
  readRun,
  type RunDetail,
  type RunProblem,
  type StepView,
  type Timeline,
  type TimelinePage,
} from "./run-view.js";
export type { Waiting } from "./waiting.js";
export type { InboxView, InboxEventView } from "./inbox-view.js";
export { readRunList, type KeyCheck, type RunList, type ListedRun, type RunMark } from "./list-view.js";
export type { CallView, CallState, CallMark, DecisionView } from "./call-view.js";
export type { Change } from "./diff.js";
export { ConsoleError } from "./console-error.js";
