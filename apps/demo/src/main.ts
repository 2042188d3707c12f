/**
 * The main job: a durable run survives its worker.
 *   pnpm demo [--store sqlite:<path>] [--runs N] [--rerun-in-doubt]
 * Worker 1 runs order after order and dies inside email_tickets of the last
 * one; worker 2, a new process, recovers it: finished calls replay from the
 * log, the call in doubt waits for your decision, and the card is charged once.
 */
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_STORE } from "./store-url.js";
import { asArgs, demoOptions } from "./options.js";
import { CardProcessor } from "./tickets.js";

const options = demoOptions(process.argv.slice(2));
// The card processor's log sits beside a SQLite store, else beside the default one.
const base = (options.store.startsWith("sqlite:") ? options.store : DEFAULT_STORE).slice("sqlite:".length);
const cardLog = `${base}.cards.jsonl`;
mkdirSync(dirname(cardLog), { recursive: true });
// The default store starts empty each time, so the demo can be run again and again.
if (options.store === DEFAULT_STORE) for (const suffix of ["", "-wal", "-shm"]) rmSync(`${base}${suffix}`, { force: true });
const eventLog = `${base}.events.jsonl`;
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
