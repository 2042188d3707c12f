import type { JsonValue } from "@durable/core";
import { checkOptions, type OptionTable } from "@durable/core/runner";

/** How a `Call` node builds its arguments and where its result goes. */
export interface CallOptions<S> {
  /** The tool's arguments, from the state. Must be deterministic: it runs again on recovery. */
  readonly args: (state: S) => JsonValue;
  /** The state field the tool's result is written to. */
  readonly into?: keyof S & string;
}

const CALL_OPTIONS: OptionTable<CallOptions<unknown>> = { args: "function", into: "string" };

/** A node that calls one tool: arguments from the state, the result into a state field. */
export class Call<S = never> {
  readonly tool: string;
  readonly args: (state: S) => JsonValue;
  readonly into: (keyof S & string) | undefined;

  constructor(tool: string, options: CallOptions<S>) {
    checkOptions(`Call ${JSON.stringify(tool)}`, options, CALL_OPTIONS);
    this.tool = tool;
    this.args = options.args;
    this.into = options.into;
  }
}
