import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Executor, Sealer, StoreUnavailable, jsonlEventSink, type CheckpointStore } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { DEMO_KEY, eventLogFor, openStore } from "@durable-apps/demo/store-url";
import { CardProcessor, tickets, ticketsRegistry } from "@durable-apps/demo/tickets";
import { readOneRun, readRuns } from "../src/runs.js";
import { startViewer } from "../src/server.js";

const demo = fileURLToPath(new URL("../../demo/src/main.ts", import.meta.url));
const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "durable-viewer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the run viewer", () => {
  it("marks a call left in doubt, and reads without writing: a POST is refused", async () => {
    const storeUrl = `sqlite:${join(dir, "doubt.db")}`;
    // No decision and no terminal: worker 2 leaves email_tickets in doubt.
    execFileSync(process.execPath, ["--import", "tsx", demo, "--store", storeUrl, "--runs", "1"], { encoding: "utf8" });
    const store = await openStore(storeUrl);
    const sealer = Sealer.withKeys(DEMO_KEY);
    try {
      const [run] = await readRuns(store, sealer, eventLogFor(storeUrl));
      expect(run).toMatchObject({ status: "running", recovered: false, segment: 1 });
      expect(run!.calls.map((c) => [c.tool, c.mark])).toEqual([
        ["hold_seats", "ran"],
        ["charge_card", "ran"],
        ["email_tickets", "in doubt"],
      ]);
      const viewer = await startViewer({ store, sealer, eventLog: eventLogFor(storeUrl), label: storeUrl, port: 0, host: "127.0.0.1" });
      try {
        expect((await fetch(viewer.url, { method: "POST" })).status).toBe(405);
        const page = await (await fetch(`${viewer.url}/runs/${encodeURIComponent(run!.runId)}`)).text();
        expect(page).toContain('data-mark="in doubt"');
        expect((await fetch(`${viewer.url}/runs/nope`)).status).toBe(404);
      } finally {
        await viewer.close();
      }
    } finally {
      await store.close();
    }
  }, 120_000);

  it("marks a call whose result a recovery took from the log as replayed", async () => {
    const storeUrl = `sqlite:${join(dir, "replay.db")}`;
    const store = await openStore(storeUrl);
    const events = jsonlEventSink(eventLogFor(storeUrl));
    const runner = (checkpoints: CheckpointStore) =>
      new FlowRunner(new Executor(ticketsRegistry(new CardProcessor(join(dir, "replay.cards.jsonl")))), { checkpoints, checkpointKey: DEMO_KEY, events });
    // The first worker loses its store at the save after hold_seats: the call is done in the log, the step is not saved.
    let saves = 0;
    const cutOff: CheckpointStore = {
      save: (id, step, row) => (++saves === 2 ? Promise.reject(new StoreUnavailable("cut off")) : store.save(id, step, row)),
      latest: (id) => store.latest(id),
      listUnfinished: (flow) => store.listUnfinished(flow),
      delete: (id) => store.delete(id),
      recordCall: (id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed),
      calls: (id) => store.calls(id),
      close: () => store.close(),
    };
    try {
      await expect(runner(cutOff).run(tickets, { show: "Hamlet", seats: 2 }, { runId: "replay-1" })).rejects.toThrow(StoreUnavailable);
      await runner(store).recover(tickets, "replay-1");
      const run = await readOneRun(store, Sealer.withKeys(DEMO_KEY), eventLogFor(storeUrl), "replay-1");
      expect(run).toMatchObject({ status: "done", recovered: true });
      expect(run!.calls.map((c) => [c.tool, c.mark])).toEqual([
        ["hold_seats", "replayed"],
        ["charge_card", "ran"],
        ["email_tickets", "ran"],
      ]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it.each([
    [["--store", "ftp://x"], /^--store "ftp:\/\/x" names no store this knows: use sqlite:<path>, redis:\/\/host:port or postgresql:\/\/.+\.\n$/],
    [["--store", "redis://127.0.0.1:1"], /^--store redis:\/\/127\.0\.0\.1:1 does not answer \(.*\): start that server, or pick another store, .+\.\n$/],
    [["--port", "x"], /^--port takes a port number, not x\.\n$/],
  ])("bad input %j: one line that says what to do, exit 2", (args, message) => {
    const result = spawnSync(process.execPath, ["--import", "tsx", main, ...args], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(message);
  }, 60_000);
});
