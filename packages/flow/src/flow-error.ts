import { DurableError } from "@durable/core";

/** The flow's graph is invalid, or it changed since the checkpoint was saved. */
export class FlowError extends DurableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("FLOW_ERROR", message, options);
  }
}
