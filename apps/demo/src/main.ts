/**
 * The main job: a durable run survives its worker.
 *   pnpm demo [--store sqlite:<path> | redis://… | postgresql://…] [--runs N] [--rerun-in-doubt]
 * Worker 1 runs order after order and dies inside email_tickets of the last
 * one; worker 2, a new process, recovers it: finished calls replay from the
 * log, the call in doubt waits for your decision, and the card is charged once.
 */
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { CommandLineError } from "./command-line-error.js";
import { DEFAULT_STORE, cardLogFor, eventLogFor, openStore } from "./store-url.js";
import { asArgs, demoOptions } from "./options.js";
import { CardProcessor } from "./tickets.js";

const options = await checked(async () => {
  const parsed = demoOptions(process.argv.slice(2));
  // A store that is unknown or does not answer is one line, before any worker starts.
  await (await openStore(parsed.store)).close();
  return parsed;
});
const cardLog = cardLogFor(options.store);
const eventLog = eventLogFor(options.store);
mkdirSync(dirname(cardLog), { recursive: true });
// The default store starts empty each time, so the demo can be run again and again.
if (options.store === DEFAULT_STORE) for (const suffix of ["", "-wal", "-shm"]) rmSync(`${DEFAULT_STORE.slice("sqlite:".length)}${suffix}`, { force: true });
rmSync(cardLog, { force: true });
rmSync(eventLog, { force: true });

function worker(mode: "first" | "second"): Promise<NodeJS.Signals | number | null> {
  const script = fileURLToPath(new URL("./worker.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, mode, cardLog, ...asArgs(options)], { stdio: "inherit" });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
}

console.log(`store: ${options.store}\n`);
const firstExit = await worker("first");
console.log(`\n(worker 1 exited: ${String(firstExit)})\n`);
const secondExit = await worker("second");

const charges = new CardProcessor(cardLog).charges();
const byRun = new Map<string, number>();
for (const c of charges) byRun.set(c.runId, (byRun.get(c.runId) ?? 0) + 1);
const twice = [...byRun].filter(([, n]) => n > 1);
const last = charges.at(-1);
console.log(`\ncard log: ${charges.length} charge(s) for ${byRun.size} order(s); charged twice: ${twice.length === 0 ? "none" : twice.map(([r]) => r).join(", ")}`);
if (last !== undefined) console.log(`charge_card ran once for ${last.runId}: idempotency key ${last.key.slice(0, 16)}…, $${last.cents / 100}`);
console.log(`events of both workers: ${eventLog}`);
process.exitCode = secondExit === 0 && twice.length === 0 ? 0 : 1;

/** What `run` gives, or exit 2 with the one-line message of a `CommandLineError`. */
async function checked<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}
