/**
 * One demo worker process.
 *   worker.ts first  [options]   runs order after order; dies (SIGKILL) inside email_tickets of the last one
 *   worker.ts second [options]   recovers every unfinished run of the flow
 */
import { createInterface } from "node:readline/promises";
import {
  type CheckpointStore,
  type DurableEvent,
  Executor,
  jsonlEventSink,
  RecoveryNeedsDecision,
} from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { parseCommandLine } from "@durable-apps/shared/command-line";
import { DEMO_COMMAND, demoOptions } from "./options.js";
import { DEMO_KEY, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { CardProcessor, tickets, ticketsRegistry } from "@durable-apps/shared/tickets";

const { values, positionals } = parseCommandLine(DEMO_COMMAND, process.argv.slice(2));
const options = demoOptions(values);
const [mode, cardLog] = positionals as [string, string];
const card = new CardProcessor(cardLog);
// Every event of both workers goes to a JSON Lines file beside the card log, for the run viewer.
const eventLog = jsonlEventSink(eventLogFor(options.store));
const say = (line: string) => console.log(`${mode === "first" ? "worker 1" : "worker 2"} | ${line}`);

function runner(store: CheckpointStore, events?: DurableEvent[], insideEmail?: (runId: string) => void): FlowRunner {
  return new FlowRunner(new Executor(ticketsRegistry(card, insideEmail)), {
    checkpoints: store,
    checkpointKey: DEMO_KEY,
    events: (event: DurableEvent) => {
      events?.push(event);
      return eventLog(event);
    },
  });
}

async function first(): Promise<void> {
  const store = await openStore(options.store);
  const suffix = Date.now().toString(36);
  const last = `order-${options.runs}-${suffix}`;
  const worker = runner(store, undefined, (runId) => {
    if (runId !== last) return;
    say(`${runId}: inside email_tickets: the worker dies now (SIGKILL)`);
    process.kill(process.pid, "SIGKILL");
  });
  const started = performance.now();
  for (let i = 1; i <= options.runs; i++) {
    const runId = `order-${i}-${suffix}`;
    if (i === options.runs && i > 1) {
      const seconds = (performance.now() - started) / 1000;
      if (options.runs > 5) progress(i - 1, options.runs);
      say(`${i - 1} orders done in ${seconds.toFixed(2)} s (${((i - 1) / seconds).toFixed(0)} runs/s)`);
    }
    const result = await worker.run(tickets, { show: "Hamlet", seats: 2 }, { runId });
    if (options.runs <= 5) say(`${runId}: ${result.status}, ${result.status === "done" ? result.state.note : ""}`);
    else if (i % Math.max(1, Math.floor(options.runs / 50)) === 0) progress(i, options.runs);
  }
}

function progress(done: number, total: number): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  const bar = `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total}`;
  if (process.stdout.isTTY) process.stdout.write(`\rworker 1 | ${bar}${done === total - 1 ? "\n" : ""}`);
  else if (done === total - 1) say(bar);
}

async function second(): Promise<void> {
  const store = await openStore(options.store);
  const events: DurableEvent[] = [];
  const worker = runner(store, events);
  say("starts and recovers every unfinished run of flow tickets");
  let results = await worker.recoverAll(tickets);
  const inDoubt = [...results].filter(([, r]) => r instanceof RecoveryNeedsDecision) as Array<
    [string, RecoveryNeedsDecision]
  >;
  for (const [runId, error] of inDoubt) {
    say(`${runId}: in doubt: ${error.calls.map(({ tool, why }) => `${tool} (${why})`).join(", ")}`);
  }
  if (inDoubt.length > 0) {
    if (!(await mayRerun())) {
      say(
        "left in doubt: no terminal to ask whether the mail went out; `pnpm demo --rerun-in-doubt` decides it may run again",
      );
      return;
    }
    results = await worker.recoverAll(tickets, { rerunInDoubt: true });
  }
  for (const [runId, result] of results) {
    if (result instanceof Error) say(`${runId}: ${result.name}: ${result.message}`);
    else say(`${runId}: ${result.status}${result.status === "done" ? `, ${result.state.note}` : ""}`);
  }
  for (const event of events) {
    if (event.type !== "run.recovered") continue;
    const names = (calls: ReadonlyArray<{ tool: string }>) => calls.map((c) => c.tool).join(", ") || "none";
    say(
      `${event.runId}: claimed it at step ${event.step}; replayed from the log: ${names(event.replayed)}; ran again: ${names(event.rerun)}`,
    );
  }
  const recovered = new Set(events.filter((e) => e.type === "run.recovered").map((e) => e.runId)).size;
  say(`recovered ${recovered} run(s)`);
  await store.close();
}

async function mayRerun(): Promise<boolean> {
  if (options.rerunInDoubt) {
    say("--rerun-in-doubt: we checked, no mail went out, so email_tickets may run again");
    return true;
  }
  if (!process.stdin.isTTY) return false;
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await prompt.question(
    "worker 2 | Did the tickets mail go out? Check the mail server. [y = it did / N = run it again] ",
  );
  prompt.close();
  return !answer.trim().toLowerCase().startsWith("y");
}

if (mode === "first") await first();
else await second();
