/**
 * The main job: a durable run survives its worker (`pnpm demo --help` lists the options).
 * Worker 2 starts first, a standing worker serving the tickets flow; worker 1
 * runs order after order and dies inside email_tickets of the last one. When
 * that run's lease runs out, worker 2 takes it over by itself: finished calls
 * replay from the log, the call in doubt waits for your decision, and the card
 * is charged once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runCommand } from "@durable-apps/shared/command-line";
import { readJsonlEvents } from "@durable/core";
import { deleteEarlierRuns } from "./earlier-runs.js";
import { DEMO_COMMAND, asArgs, demoOptions, type DemoOptions } from "./options.js";
import { DEMO_FOLDER, cardLogFor, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { CardProcessor } from "@durable-apps/shared/tickets";
import { FIRST_EXITED, nextMessage, SECOND_SERVES } from "./worker-messages.js";

await runCommand(DEMO_COMMAND, async (values) => {
  const options = demoOptions(values);
  // The demo's own folder holds its default store and, for every store, its card and event logs.
  mkdirSync(DEMO_FOLDER, { recursive: true });
  // A store that is unknown or does not answer is one line, before any worker starts.
  const store = await openStore(options.store);
  try {
    await deleteEarlierRuns(store, eventLogFor(options.store));
  } finally {
    await store.close();
  }
  await demo(options);
});

async function demo(options: DemoOptions): Promise<void> {
  const cardLog = cardLogFor(options.store);
  const eventLog = eventLogFor(options.store);
  rmSync(cardLog, { force: true });
  rmSync(eventLog, { force: true });

  console.log(`store: ${options.store}\n`);
  const second = worker("second", cardLog, options);
  const secondExit = exitOf(second);
  // Worker 1 starts once worker 2 serves the flow, so worker 2 watches each of its runs from the first.
  const serving = await Promise.race([
    nextMessage(second, SECOND_SERVES).then(() => true),
    secondExit.then(() => false),
  ]);
  if (!serving) {
    console.log(`\n(worker 2 exited before it served the flow: ${String(await secondExit)})`);
    process.exitCode = 1;
    return;
  }
  const firstExit = await exitOf(worker("first", cardLog, options));
  console.log(`\n(worker 1 exited: ${String(firstExit)})\n`);
  if (second.connected) second.send(FIRST_EXITED);
  const secondCode = await secondExit;

  const charges = new CardProcessor(cardLog).charges();
  const byRun = new Map<string, number>();
  for (const c of charges) byRun.set(c.runId, (byRun.get(c.runId) ?? 0) + 1);
  const twice = [...byRun].filter(([, n]) => n > 1);
  const last = charges.at(-1);
  console.log(
    `\ncard log: ${charges.length} charge(s) for ${byRun.size} order(s); charged twice: ${twice.length === 0 ? "none" : twice.map(([r]) => r).join(", ")}`,
  );
  if (last !== undefined)
    console.log(
      `charge_card ran once for ${last.runId}: idempotency key ${last.key.slice(0, 16)}…, $${last.cents / 100}`,
    );
  // Worker 2 claims a run only once its lease ran out: the order worker 1 died in, none of its live ones.
  const takenOver = new Set(
    readJsonlEvents(eventLog)
      .filter((event) => event.type === "run.recovered" || event.type === "run.needs-decision")
      .map((event) => event.runId),
  );
  console.log(
    `runs taken over: ${[...takenOver].join(", ") || "none"}${last === undefined ? "" : `; worker 1 died in ${last.runId}`}`,
  );
  console.log(`events of both workers: ${eventLog}`);
  process.exitCode = secondCode === 0 && twice.length === 0 ? 0 : 1;
}

/** A worker process; worker 2 gets an IPC channel to say when it serves the flow and to hear that worker 1 exited. */
function worker(mode: "first" | "second", cardLog: string, options: DemoOptions): ChildProcess {
  const script = fileURLToPath(new URL("./worker.ts", import.meta.url));
  return spawn(process.execPath, ["--import", "tsx", script, mode, cardLog, ...asArgs(options)], {
    stdio: mode === "second" ? ["inherit", "inherit", "inherit", "ipc"] : "inherit",
  });
}

function exitOf(child: ChildProcess): Promise<NodeJS.Signals | number | null> {
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
}
