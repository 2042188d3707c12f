import { SpanKind } from "@opentelemetry/api";
import { activeContext, withContext, withSpan } from "./guard.js";
import { instruments } from "./metrics.js";
import { failSpan, startSpan } from "./tracing.js";

/** How a tool call's attempt ended, as its span and the `durable.calls` counter say. */
type CallOutcomeName = "done" | "error" | "retrying" | "replayed" | "denied" | "in_doubt";

interface CallNamed {
  readonly callId: string;
  readonly tool: string;
}

/** The span of one attempt of a tool call, a child of the active span (the step's), and its count. */
export interface CallSpan {
  /** Runs the tool with the call's span active. */
  around<T>(tool: () => Promise<T>): Promise<T>;
  /** Ends the span with how the attempt ended; gives `error` back, to throw. */
  end<E>(outcome: CallOutcomeName, error?: E): E;
}

function attributes(runId: string, call: CallNamed): Record<string, string> {
  return { "durable.run.id": runId, "durable.call.id": call.callId, "durable.call.tool": call.tool };
}

/**
 * Starts the span of attempt `attempt` of a call (`rerun`: a call found in
 * doubt that a recovery runs again). It is ended once, with the attempt's
 * outcome, which is counted.
 */
export function callSpan(runId: string, call: CallNamed, attempt: number, rerun: boolean): CallSpan {
  const parent = activeContext();
  const span = startSpan(
    `durable.call ${call.tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: { ...attributes(runId, call), "durable.call.attempt": attempt, "durable.call.rerun": rerun },
    },
    parent,
  );
  let ended = false;
  return {
    around: (tool) => withContext(withSpan(parent, span), tool),
    end(outcome, error) {
      if (ended) return error as never;
      ended = true;
      span.setAttribute("durable.call.outcome", outcome);
      if (outcome === "in_doubt") span.setAttribute("durable.call.in_doubt", true);
      if (error !== undefined && outcome !== "retrying") failSpan(span, error);
      else if (error !== undefined) span.recordException(error instanceof Error ? error : String(error));
      span.end();
      countCall(call.tool, outcome);
      return error as never;
    },
  };
}

/** A call whose outcome came from the log (replayed, not run) or from a denial: a span of no length, and its count. */
export function settledCall(runId: string, call: CallNamed, outcome: "replayed" | "denied"): void {
  const span = startSpan(`durable.call ${call.tool}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      ...attributes(runId, call),
      "durable.call.outcome": outcome,
      ...(outcome === "replayed" ? { "durable.call.replayed": true } : {}),
    },
  });
  span.end();
  countCall(call.tool, outcome);
}

function countCall(tool: string, outcome: CallOutcomeName): void {
  instruments().calls.add(1, { "durable.call.tool": tool, "durable.call.outcome": outcome });
}
