import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "@durable/conformance";
import { Executor, StoreUnavailable, type CheckpointRow } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { RedisCheckpointStore } from "../src/index.js";
import redis, { REDIS_URL, client, dropPrefix, newStore, redisAnswers } from "./redis.js";
// The multi-process harness and the tickets flow are shared with the SQLite store's tests.
import { Child, executions } from "../../store-sqlite/test/processes.js";
import { KEY, tickets, ticketsRegistry } from "../../store-sqlite/test/tickets.js";

const OPEN = fileURLToPath(new URL("./open-store.ts", import.meta.url));
const WORKER = "./worker.ts";
const dir = mkdtempSync(join(tmpdir(), "durable-redis-tests-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const row = (over: Partial<CheckpointRow> = {}): CheckpointRow => ({ status: "running", segment: 0, flow: "f", kind: "flow", sealed: "d1.-.{}", ...over });

async function admin() {
  const c = createClient({ url: REDIS_URL });
  c.on("error", () => {});
  await c.connect();
  return c;
}

// Tests share one Redis server: every store has its own random prefix, and files run one at a time.
if (await redisAnswers()) {
  // Prefixes holding glob and separator characters are tenants like any other.
  let n = 0;
  const awkward = ["a*", "a?", "[a]", "{a}", "}{", "a:b", "a b", "*"];
  runConformance(
    { ...redis, name: "redis, prefixes holding * ? [ ] { } : and spaces", createStore: () => new RedisCheckpointStore(client, { prefix: `${awkward[n++ % awkward.length]}${Math.random()}` }) },
    { groups: ["isolation"] },
  );

  describe("RedisCheckpointStore", () => {
    it("keeps every key of a run in one hash tag", () => {
      const store = newStore();
      const keys = Object.values(store.keysOf("run {x}:*"));
      const tags = keys.map((k) => k.slice(k.indexOf("{") + 1, k.indexOf("}")));
      expect(new Set(tags).size).toBe(1);
    });

    it("applies a retried record once", async () => {
      const store = newStore();
      await store.save("r", 0, row());
      await store.recordCall("r", 0, 0, "sealed-0");
      await store.recordCall("r", 0, 0, "sealed-0");
      expect(await store.calls("r")).toEqual([{ runId: "r", segment: 0, seq: 0, sealed: "sealed-0" }]);
      await expect(store.recordCall("r", 0, 0, "another")).rejects.toThrow(/not the next one/);
      await dropPrefix(store);
      await store.close();
    });

    it("gives StoreUnavailable while Redis does not answer, and works again once it does", async () => {
      const store = newStore({ operationTimeoutMs: 300 });
      await store.save("r", 0, row());
      const c = await admin();
      await c.sendCommand(["CLIENT", "PAUSE", "1500", "ALL"]);
      await expect(store.save("r", 1, row())).rejects.toThrow(StoreUnavailable);
      await new Promise((r) => setTimeout(r, 1600));
      // The paused save was never confirmed: the run goes on from what Redis says.
      const latest = await store.latest("r");
      await store.save("r", latest.step + 1, row());
      await c.close();
      await dropPrefix(store);
      await store.close();
    });

    it("gives StoreUnavailable when its connection is killed mid-operation, never a silent success, and reconnects", async () => {
      let own: ReturnType<typeof client> | undefined;
      const store = new RedisCheckpointStore(() => (own = client()), { prefix: `kill:${Math.random()}`, operationTimeoutMs: 3000 });
      await store.save("r", 0, row());
      const id = String(await own!.sendCommand(["CLIENT", "ID"]));
      const c = await admin();
      // Writes wait while paused, so the store's record is in flight when its connection dies.
      await c.sendCommand(["CLIENT", "PAUSE", "2000", "WRITE"]);
      const inFlight = store.recordCall("r", 0, 0, "x").then(() => "applied", (error: unknown) => error);
      await new Promise((r) => setTimeout(r, 100));
      await c.sendCommand(["CLIENT", "KILL", "ID", id]);
      expect(await inFlight).toBeInstanceOf(StoreUnavailable);
      await c.sendCommand(["CLIENT", "UNPAUSE"]);
      // The store reconnects; the log shows whether the killed write was applied, and numbering goes on from it.
      const before = (await store.calls("r")).length;
      await store.recordCall("r", 0, before, `y${before}`);
      expect((await store.calls("r")).length).toBe(before + 1);
      await c.close();
      await dropPrefix(store);
      await store.close();
    });
  });

  describe("Redis across processes", () => {
    it("8 processes recovering one run at once, 50 times: exactly one winner each time, no tool ran twice", async () => {
      const prefix = `race:${Math.random()}`;
      const effects = join(dir, "race.effects");
      const workers = Array.from({ length: 8 }, () => new Child(WORKER, [OPEN, prefix, "serve", effects]));
      const store = new StopsBeforeCharge(client, { prefix });
      try {
        await Promise.all(workers.map((w) => w.waitFor((l) => l === "ready")));
        const setup = new FlowRunner(new Executor(ticketsRegistry(effects)), { checkpoints: store, checkpointKey: KEY });
        for (let trial = 0; trial < 50; trial++) {
          const runId = `race-${trial}`;
          void setup.run(tickets, { show: "Hamlet", seats: 2 }, { runId });
          await until(async () => (await store.latest(runId).catch(() => undefined))?.step === 1);
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
        expect([...counts.values()].every((c) => c === 1)).toBe(true);
      } finally {
        workers.forEach((w) => w.kill());
        await dropPrefix(store);
      }
    }, 300_000);

    it("a worker killed with SIGKILL inside email_tickets: the next process finds it in doubt, then completes it", async () => {
      const prefix = `crash:${Math.random()}`;
      const effects = join(dir, "crash.effects");
      const crashing = new Child(WORKER, [OPEN, prefix, "crash", effects, "order-7"]);
      await crashing.waitFor((l) => l === "inside email_tickets");
      crashing.kill();
      expect((await crashing.exited()).signal).toBe("SIGKILL");
      const second = new Child(WORKER, [OPEN, prefix, "serve", effects]);
      try {
        await second.waitFor((l) => l === "ready");
        second.send("recover order-7");
        expect(await second.waitFor((l) => l.includes("order-7"))).toBe("in-doubt order-7 email_tickets");
        second.send("recover order-7 rerun");
        expect(await second.waitFor((l) => l.startsWith("won order-7"))).toBe("won order-7 done");
      } finally {
        second.kill();
        await dropPrefix(new RedisCheckpointStore(client, { prefix }));
      }
      const counts = executions(effects);
      expect([counts.get("order-7 hold_seats"), counts.get("order-7 charge_card"), counts.get("order-7 email_tickets")]).toEqual([1, 1, 2]);
    }, 120_000);
  });
} else {
  describe("redis store", () => it("needs Redis at REDIS_URL (see the warning above)", (ctx) => ctx.skip("Redis is not running")));
}

/** A store through which a worker stops for good just before charge_card's started record. */
class StopsBeforeCharge extends RedisCheckpointStore {
  override async recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    if (sealed.includes('"tool":"charge_card"')) return new Promise(() => {});
    return super.recordCall(runId, segment, seq, sealed);
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
}
