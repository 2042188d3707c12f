import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ListedRun, type RunningConsole, startConsole } from "../src/index.js";
import { KEY, payments, runner } from "./fixture.js";

/*
 * A run waiting for an event, as the console shows it: what it waits for,
 * and until when.
 */

const dir = mkdtempSync(join(tmpdir(), "durable-console-events-"));
const events = join(dir, "events.jsonl");
const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
const ids = { waits: "e-waits", forever: "e-forever" };
let reader: RunningConsole;

beforeAll(async () => {
  const r = runner(store, events);
  await r.run(payments, {}, { runId: ids.waits });
  await r.run(payments, { timeoutMs: null }, { runId: ids.forever });
  reader = await startConsole({ store, checkpointKey: KEY, label: "sqlite", port: 0 });
}, 60_000);

afterAll(async () => {
  await reader?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (path: string) =>
  fetch(`${reader.api}${path}`, { headers: { authorization: `Bearer ${reader.token}` }, redirect: "manual" });
const page = async (runId: string) => (await get(`/runs/${encodeURIComponent(runId)}`)).text();

describe("a run waiting for an event, in the console", () => {
  it("says which event it waits for and until when, in the list and on its page", async () => {
    const list = (await (await get("/api/runs")).json()) as { runs: ListedRun[] };
    const listed = new Map(list.runs.map((run) => [run.runId, run]));
    expect(listed.get(ids.waits)).toMatchObject({
      marks: ["awaits event"],
      waiting: { for: "event", names: ["paid"] },
    });
    const waiting = listed.get(ids.waits)?.waiting;
    const until = waiting?.for === "event" ? (waiting.until ?? 0) : 0;
    expect(until - Date.now()).toBeGreaterThan(3_500_000);
    expect(until - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect(listed.get(ids.forever)?.waiting).toEqual({ for: "event", names: ["paid"] });
    const html = await (await get("/")).text();
    expect(html).toMatch(/waiting for event paid until \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/);
    expect(html).toContain("waiting for event paid with no timeout");

    const shown = await page(ids.waits);
    expect(shown).toContain('data-waits-for="event"');
    expect(shown).toMatch(/Waiting for event paid until \d{4}-.*: it holds no worker/);
    expect(await page(ids.forever)).toContain("Waiting for event paid with no timeout");
  });
});
