import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Executor, type CheckpointStore } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { Child, executions } from "./processes.js";
import { KEY, tickets, ticketsRegistry } from "./tickets.js";

/** How a store is shared by worker processes. */
export interface ProcessTarget {
  /** A module whose default export opens the store in a worker process: `(arg: string) => CheckpointStore`. */
  readonly openModule: string;
  /** Makes room for one test's runs (a file, a prefix, tables) and gives the argument the workers open it with. */
  prepare(label: string): Promise<string> | string;
  /** Opens the same store in this process. */
  open(arg: string): Promise<CheckpointStore> | CheckpointStore;
}

const WORKER = "./worker.ts";

/**
 * Registers the multi-process tests every store that several processes share
 * must pass: 8 processes racing to recover one run, 50 times, and a worker
 * killed with SIGKILL inside `email_tickets` whose run the next process recovers.
 */
export function processCases(target: ProcessTarget): void {
  const dir = mkdtempSync(join(tmpdir(), "durable-processes-"));

  it("8 processes recovering one run at once, 50 times: exactly one winner each time, no tool ran twice", async () => {
    const arg = await target.prepare("race");
    const effects = join(dir, "race.effects");
    const workers = Array.from({ length: 8 }, () => new Child(WORKER, [target.openModule, arg, "serve", effects]));
    const store = stopsBeforeCharge(await target.open(arg));
    try {
      await Promise.all(workers.map((w) => w.waitFor((l) => l === "ready")));
      const setup = new FlowRunner(new Executor(ticketsRegistry(effects)), { checkpoints: store, checkpointKey: KEY });
      for (let trial = 0; trial < 50; trial++) {
        const runId = `race-${trial}`;
        // The setup worker stops for good before charge_card: the run is cut short after step 1.
        void setup.run(tickets, { show: "Hamlet", seats: 2 }, { runId });
        await until(async () => (await store.latest(runId).catch(() => undefined))?.step === 1);
        // Every worker reads the latest checkpoint, then all claim the same step at once.
        workers.forEach((w) => w.send(`race ${runId}`));
        await Promise.all(workers.map((w) => w.waitFor((l) => l === `at-claim ${runId}`)));
        workers.forEach((w) => w.send(`go ${runId}`));
        const answers = await Promise.all(workers.map((w) => w.waitFor((l) => l.split(" ")[1] === runId && !l.startsWith("at-claim"))));
        expect(answers.filter((a) => a.startsWith("won")), answers.join("; ")).toHaveLength(1);
        expect(answers.filter((a) => a.startsWith("conflict"))).toHaveLength(7);
      }
      const counts = executions(effects);
      expect(counts.size).toBe(150);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    } finally {
      workers.forEach((w) => w.kill());
    }
  }, 300_000);

  it("a worker killed with SIGKILL inside email_tickets: the next process finds it in doubt, then completes it", async () => {
    const arg = await target.prepare("crash");
    const effects = join(dir, "crash.effects");
    const crashing = new Child(WORKER, [target.openModule, arg, "crash", effects, "order-7"]);
    await crashing.waitFor((l) => l === "inside email_tickets");
    crashing.kill();
    expect((await crashing.exited()).signal).toBe("SIGKILL");
    const second = new Child(WORKER, [target.openModule, arg, "serve", effects]);
    try {
      await second.waitFor((l) => l === "ready");
      second.send("recover order-7");
      expect(await second.waitFor((l) => l.includes("order-7"))).toBe("in-doubt order-7 email_tickets");
      second.send("recover order-7 rerun");
      expect(await second.waitFor((l) => l.startsWith("won order-7"))).toBe("won order-7 done");
    } finally {
      second.kill();
    }
    const counts = executions(effects);
    expect([counts.get("order-7 hold_seats"), counts.get("order-7 charge_card"), counts.get("order-7 email_tickets")]).toEqual([1, 1, 2]);
  }, 120_000);
}

/** The store as a worker sees it that stops for good just before charge_card's started record. */
function stopsBeforeCharge(store: CheckpointStore): CheckpointStore {
  return {
    save: (id, step, row) => store.save(id, step, row),
    latest: (id) => store.latest(id),
    listUnfinished: (flow) => store.listUnfinished(flow),
    delete: (id) => store.delete(id),
    recordCall: (id, segment, seq, sealed) => (sealed.includes('"tool":"charge_card"') ? new Promise(() => {}) : store.recordCall(id, segment, seq, sealed)),
    calls: (id) => store.calls(id),
    close: () => store.close(),
  };
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
}
