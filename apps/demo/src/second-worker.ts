import type { RunRecovered } from "@durable/core/runner";
import {
  type CheckpointStore,
  type DurableEvent,
  RecoveryNeedsDecision,
  type RunWorker,
  startWorker,
  workerId,
} from "@durable/core";
import type { FlowRunner } from "@durable/flow";
import { openStore } from "@durable-apps/shared/store-url";
import { type CardProcessor, tickets } from "@durable-apps/shared/tickets";
import { decide } from "./decision.js";
import { clock, demoRunner, LEASE_MS, POLL_MS } from "./demo-runner.js";
import { type HeldRun, LeaseWatch } from "./lease-watch.js";
import type { DemoOptions } from "./options.js";
import { FIRST_EXITED, nextMessage, SECOND_SERVES } from "./worker-messages.js";

const say = (line: string) => console.log(`worker 2 | ${line}`);
const tools = (calls: ReadonlyArray<{ tool: string }>) => calls.map((c) => c.tool).join(", ") || "none";

/**
 * Worker 2: a standing worker serving the tickets flow, as a service runs one.
 * It claims a run only when the store says its lease ran out, so worker 1's
 * live runs are never its; it takes the run worker 1 died in over by itself,
 * stops at the call in doubt, and goes on once the call is decided.
 */
export async function runSecond(options: DemoOptions, card: CardProcessor): Promise<void> {
  const parent = process;
  if (parent.send === undefined) throw new Error("worker 2 runs under the demo: start it with `pnpm demo`.");
  const store = await openStore(options.store);
  const owner = workerId();
  const recovered = new Set<string>();
  const stuck = new Map<string, unknown>();
  const watch = new LeaseWatch(store, tickets.name, owner, tellHeld);
  const runner = demoRunner({ store, storeUrl: options.store, card, onEvent: (event) => tellTakeover(event) });
  say(
    `worker id ${owner}, leases of ${LEASE_MS / 1000} s: serves flow tickets, looks for claimable runs every ${POLL_MS} ms`,
  );
  const worker = startWorker({
    serve: [runner.served(tickets)],
    pollMs: POLL_MS,
    maxPollMs: 2 * POLL_MS,
    // The worker's own log lines (a takeover, a run left for a decision), marked as this worker's.
    logger: { info: say, warn: say, error: say },
    onStuck: (runId, error) => {
      stuck.set(runId, error);
      if (error instanceof RecoveryNeedsDecision)
        say(`${runId}: in doubt: ${error.calls.map(({ tool, why }) => `${tool} (${why})`).join(", ")}`);
      else say(`${runId}: left: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    },
  });
  const firstExited = nextMessage(parent, FIRST_EXITED);
  parent.send(SECOND_SERVES);
  await firstExited;
  parent.disconnect();

  await settled(worker, store, stuck);
  await watch.stop();
  const inDoubt = [...stuck.keys()].filter((runId) => stuck.get(runId) instanceof RecoveryNeedsDecision);
  let leftInDoubt = 0;
  if (inDoubt.length > 0) {
    const decision = await decide(options.rerunInDoubt, say);
    if (decision.rerun) await rerunInDoubt(inDoubt);
    else {
      say(`left in doubt: ${decision.why}`);
      leftInDoubt = inDoubt.length;
    }
  }
  await worker.stop();
  const { lost } = worker.status();
  // A run taken over and left in doubt is not recovered yet: say so, beside the count, not only above it.
  const left = leftInDoubt === 0 ? "" : `, ${leftInDoubt} taken over and left in doubt`;
  say(`recovered ${recovered.size} run(s)${left}; claims lost to another worker: ${lost}`);
  await store.close();

  function tellHeld({ runId, lease }: HeldRun): void {
    say(
      `${runId}: held by another worker, ${lease.owner}, until ${clock(lease.expiresAt)} ` +
        `(lease ${LEASE_MS / 1000} s, not renewed since ${clock(lease.expiresAt - LEASE_MS)}): claimable in ${((lease.expiresAt - lease.now) / 1000).toFixed(1)} s`,
    );
  }

  function tellTakeover(event: DurableEvent): void {
    if (event.type !== "run.needs-decision" && event.type !== "run.recovered") return;
    const held = watch.toldOf(event.runId);
    const ranOut = held === undefined ? "its lease had run out" : `its lease ran out at ${clock(held.expiresAt)}`;
    // A stop for a decision saves the run again, waiting for one: its event names that step, not the claim's.
    const step =
      event.type === "run.recovered" ? `step ${event.step}` : `left it waiting for a decision at step ${event.step}`;
    say(`${event.runId}: ${ranOut}: took it over at ${clock(Date.parse(event.at))}, ${step}, as ${owner}`);
    if (event.type === "run.recovered") tellRecovered(event);
  }

  function tellRecovered(event: RunRecovered): void {
    recovered.add(event.runId);
    say(
      `${event.runId}: claimed it at step ${event.step} as ${event.owner}; replayed from the log: ${tools(event.replayed)}; ran again: ${tools(event.rerun)}`,
    );
  }

  /**
   * The decision is an operator's claim, under its own lease owner: while it
   * drives the run, the store refuses the worker's claim of it (`LeaseHeld`).
   */
  async function rerunInDoubt(runIds: readonly string[]): Promise<void> {
    const operator: FlowRunner = demoRunner({
      store,
      storeUrl: options.store,
      card,
      owner: `operator@${process.pid}`,
      onEvent: (event) => {
        if (event.type === "run.recovered") tellRecovered(event);
      },
    });
    for (const runId of runIds) {
      try {
        const result = await operator.recover(tickets, runId, { rerunInDoubt: true });
        say(`${runId}: ${result.status}${result.status === "done" ? `, ${result.state.note}` : ""}`);
      } catch (error) {
        say(`${runId}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
      }
    }
  }
}

/** Waits until the worker drives nothing and every unfinished run of the flow is one it left for a decision. */
async function settled(worker: RunWorker, store: CheckpointStore, left: ReadonlyMap<string, unknown>): Promise<void> {
  for (;;) {
    if (worker.status().running === 0 && (await allLeft(store, left))) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function allLeft(store: CheckpointStore, left: ReadonlyMap<string, unknown>): Promise<boolean> {
  for await (const runId of store.listUnfinished(tickets.name)) if (!left.has(runId)) return false;
  return true;
}
