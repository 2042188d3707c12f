/**
 * The main job: a durable run survives its worker (`pnpm demo --help` lists the options).
 * Worker 1 runs order after order and dies inside email_tickets of the last
 * one; worker 2, a new process, recovers it: finished calls replay from the
 * log, the call in doubt waits for your decision, and the card is charged once.
 */
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runCommand } from "@durable-apps/shared/command-line";
import { deleteEarlierRuns } from "./earlier-runs.js";
import { DEMO_COMMAND, asArgs, demoOptions, type DemoOptions } from "./options.js";
import { DEMO_FOLDER, cardLogFor, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { CardProcessor } from "@durable-apps/shared/tickets";

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
  const firstExit = await worker("first", cardLog, options);
  console.log(`\n(worker 1 exited: ${String(firstExit)})\n`);
  const secondExit = await worker("second", cardLog, options);

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
  console.log(`events of both workers: ${eventLog}`);
  process.exitCode = secondExit === 0 && twice.length === 0 ? 0 : 1;
}

function worker(
  mode: "first" | "second",
  cardLog: string,
  options: DemoOptions,
): Promise<NodeJS.Signals | number | null> {
  const script = fileURLToPath(new URL("./worker.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, mode, cardLog, ...asArgs(options)], {
    stdio: "inherit",
  });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
}
