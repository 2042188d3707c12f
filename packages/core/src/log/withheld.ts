import type { DurableEvent, EventSink } from "./events.js";

/**
 * A sink that receives each event without what a user put in the run: the
 * arguments of calls in doubt, and error messages (a tool's error often
 * quotes its input). What an encrypted run's events carry unless the runner
 * is given `plainEvents`: the store holds nothing readable, and an event log
 * must not hold it in the clear either. Ids, tools, steps and times stay.
 */
export function withholdingContent(sink: EventSink): EventSink {
  return (event) => sink(withheld(event));
}

function withheld(event: DurableEvent): DurableEvent {
  switch (event.type) {
    case "run.needs-decision":
      return { ...event, calls: event.calls.map((call) => ({ ...call, args: null })) };
    case "call.retrying":
    case "call.failed":
      return { ...event, error: nameOnly(event.error) };
    case "run.done":
    case "run.failed":
      return event.error === undefined ? event : { ...event, error: nameOnly(event.error) };
    default:
      return event;
  }
}

/** An error's text (`<name>: <message>`) as its name alone. */
function nameOnly(text: string): string {
  return `${text.split(":", 1)[0]} (its message is withheld: the run is encrypted)`;
}
