import { type CheckpointStore, type DurableEvent, Executor, jsonlEventSink } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { DEMO_KEY, eventLogFor } from "@durable-apps/shared/store-url";
import { type CardProcessor, ticketsRegistry } from "@durable-apps/shared/tickets";

/**
 * How long the demo's leases last: short, so a dead worker's run is claimable
 * within seconds (a service keeps the 30 s default, which outlasts a pause).
 */
export const LEASE_MS = 3_000;

/** How often worker 2 looks for claimable runs and at the leases others hold. */
export const POLL_MS = 250;

/** What a demo runner is: its store, the card it charges, where its events go, and who holds its leases. */
export interface DemoRunnerOptions {
  readonly store: CheckpointStore;
  readonly storeUrl: string;
  readonly card: CardProcessor;
  /** Its leases' owner (default: the process's `workerId()`). */
  readonly owner?: string;
  /** Told each event after the event log took it. */
  readonly onEvent?: (event: DurableEvent) => void;
  /** Called inside email_tickets, before it mails: worker 1 dies there. */
  readonly insideEmail?: (runId: string) => void;
}

/** A tickets runner as both workers run it: every event goes to the JSON Lines log beside the card log, for the run viewer. */
export function demoRunner(options: DemoRunnerOptions): FlowRunner {
  const eventLog = jsonlEventSink(eventLogFor(options.storeUrl));
  return new FlowRunner(new Executor(ticketsRegistry(options.card, options.insideEmail)), {
    checkpoints: options.store,
    checkpointKey: DEMO_KEY,
    lease: { ms: LEASE_MS, ...(options.owner === undefined ? {} : { owner: options.owner }) },
    events: async (event: DurableEvent) => {
      await eventLog(event);
      options.onEvent?.(event);
    },
  });
}

/** A time of day as the workers print it: `14:03:07.250`, local time. */
export function clock(ms: number): string {
  const at = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, "0")}`;
}
