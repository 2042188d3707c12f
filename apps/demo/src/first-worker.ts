import { workerId } from "@durable/core";
import { openStore } from "@durable-apps/shared/store-url";
import { type CardProcessor, tickets } from "@durable-apps/shared/tickets";
import { demoRunner, LEASE_MS } from "./demo-runner.js";
import type { DemoOptions } from "./options.js";

const say = (line: string) => console.log(`worker 1 | ${line}`);

/** Worker 1: runs order after order, each under its lease, and dies (SIGKILL) inside email_tickets of the last one. */
export async function runFirst(options: DemoOptions, card: CardProcessor): Promise<void> {
  const store = await openStore(options.store);
  const suffix = Date.now().toString(36);
  const last = `order-${options.runs}-${suffix}`;
  const worker = demoRunner({
    store,
    storeUrl: options.store,
    card,
    insideEmail: (runId) => {
      if (runId !== last) return;
      say(`${runId}: inside email_tickets: the worker dies now (SIGKILL)`);
      process.kill(process.pid, "SIGKILL");
    },
  });
  say(`worker id ${workerId()}, leases of ${LEASE_MS / 1000} s: runs ${options.runs} order(s)`);
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
