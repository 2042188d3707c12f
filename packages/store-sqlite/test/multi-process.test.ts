import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { Executor } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "../src/index.js";
import { newDatabasePath, removeDatabase } from "./conformance.js";
import { Child, executions } from "./processes.js";
import { KEY, tickets, ticketsRegistry } from "./tickets.js";

const OPEN = fileURLToPath(new URL("./open-store.ts", import.meta.url));
const created: string[] = [];
const dbPath = () => {
  const path = newDatabasePath();
  created.push(path, `${path}.effects`);
  return path;
};
afterAll(() => created.forEach(removeDatabase));

/** A store through which a worker stops for good just before charge_card's started record: a run cut short after step 1. */
class StopsBeforeCharge extends SQLiteCheckpointStore {
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (sealed.includes('"tool":"charge_card"')) return new Promise(() => {});
    return super.recordCall(runId, segment, seq, sealed);
  }
}

describe("SQLite across processes", () => {
  it("lets processes opening one new file at once all succeed, making the schema once", async () => {
    const path = dbPath();
    const children = Array.from({ length: 6 }, () => new Child("./open.ts", [path]));
    const exits = await Promise.all(children.map((c) => c.exited()));
    expect(exits.map((e) => e.code), children.map((c) => c.stderr).join("\n")).toEqual([0, 0, 0, 0, 0, 0]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT value FROM durable_meta WHERE key = 'schema_version'").pluck().get()).toBe("1");
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'durable_runs'").pluck().get()).toBe(1);
    db.close();
  }, 60_000);

  it("8 processes recovering one run at once, 50 times: exactly one winner each time, no tool ran twice", async () => {
    const path = dbPath();
    const effects = `${path}.effects`;
    const workers = Array.from({ length: 8 }, () => new Child("./worker.ts", [OPEN, path, "serve", effects]));
    try {
      await Promise.all(workers.map((w) => w.waitFor((l) => l === "ready")));
      const setup = new FlowRunner(new Executor(ticketsRegistry(effects)), { checkpoints: new StopsBeforeCharge(path), checkpointKey: KEY });
      for (let trial = 0; trial < 50; trial++) {
        const runId = `race-${trial}`;
        void setup.run(tickets, { show: "Hamlet", seats: 2 }, { runId });
        await until(() => executions(effects).get(`${runId} hold_seats`) === 1);
        await until(() => Boolean(lastStatusIs(path, runId, 1)));
        // Every worker reads the latest checkpoint, then all claim the same step at once.
        workers.forEach((w) => w.send(`race ${runId}`));
        await Promise.all(workers.map((w) => w.waitFor((l) => l === `at-claim ${runId}`)));
        workers.forEach((w) => w.send(`go ${runId}`));
        const answers = await Promise.all(workers.map((w) => w.waitFor((l) => l.split(" ")[1] === runId && !l.startsWith("at-claim"))));
        const outcomes = answers.map((a) => a.split(" ")[0]);
        expect(outcomes.filter((o) => o === "won"), answers.join("; ")).toHaveLength(1);
        expect(outcomes.filter((o) => o === "conflict")).toHaveLength(7);
      }
      const counts = executions(effects);
      expect(counts.size).toBe(150);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    } finally {
      workers.forEach((w) => w.kill());
    }
  }, 300_000);

  it("a worker killed with SIGKILL inside email_tickets: the next process finds it in doubt, then completes it", async () => {
    const path = dbPath();
    const effects = `${path}.effects`;
    const crashing = new Child("./worker.ts", [OPEN, path, "crash", effects, "order-7"]);
    await crashing.waitFor((l) => l === "inside email_tickets");
    crashing.kill();
    expect((await crashing.exited()).signal).toBe("SIGKILL");

    const second = new Child("./worker.ts", [OPEN, path, "serve", effects]);
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
    expect(counts.get("order-7 charge_card")).toBe(1);
    expect(counts.get("order-7 hold_seats")).toBe(1);
    expect(counts.get("order-7 email_tickets")).toBe(2);
  }, 120_000);
});

/** True once the run's latest step is `step` (the setup worker saved it). */
function lastStatusIs(path: string, runId: string, step: number): boolean {
  const db = new Database(path, { readonly: true, timeout: 5000 });
  try {
    return db.prepare("SELECT step FROM durable_runs WHERE run_id = ?").pluck().get(runId) === step;
  } finally {
    db.close();
  }
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
}
