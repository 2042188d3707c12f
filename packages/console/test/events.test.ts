import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sendEvent } from "@durable/core";
import { Flow } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ListedRun, type RunDetail, type RunningConsole, startConsole } from "../src/index.js";
import { KEY, payments, runner } from "./fixture.js";

/*
 * A run waiting for an event, as the console shows it: what it waits for,
 * until when, and its inbox.
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
const detail = async (runId: string) => (await (await get(`/api/runs/${runId}`)).json()) as RunDetail;

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
    expect(shown).toContain("No event sent yet.");
    expect(await page(ids.forever)).toContain("Waiting for event paid with no timeout");
  });
});

describe("a run's inbox, on its page", () => {
  /** Waits for a quote, then for the payment, in one round: the first take is known by its record, not the envelope. */
  const quotes = new Flow("quotes", { state: z.object({ got: z.array(z.string()).default([]) }) })
    .node("ask", async (_state, ctx) => {
      const quote = await ctx.waitForEvent("quote");
      const paid = await ctx.waitForEvent("paid");
      return { got: [quote, paid].map((e) => (e.status === "received" ? JSON.stringify(e.payload) : e.status)) };
    })
    .end("ask");
  const deliver = (name: string, payload: unknown) =>
    sendEvent({ checkpoints: store, checkpointKey: KEY, runId: "e-quotes", name, payload, idempotencyKey: name });
  const taken = async () => (await detail("e-quotes")).inbox?.events.map((e) => [e.seq, e.name, e.payload, e.taken]);

  it("lists every event sent, each marked taken once a wait of this round or an earlier one took it", async () => {
    const r = runner(store, events);
    await r.run(quotes, {}, { runId: "e-quotes" });
    await deliver("note", "for nobody");
    await deliver("quote", 120);
    // A recovery takes the quote and waits for the payment, in the same round.
    expect(await r.recover(quotes, "e-quotes")).toMatchObject({ status: "asleep" });
    expect((await detail("e-quotes")).waiting).toMatchObject({ for: "event", names: ["paid"] });
    expect(await taken()).toEqual([
      [0, "note", "for nobody", false],
      [1, "quote", 120, true],
    ]);
    await deliver("paid", { cents: 120 });
    expect(await r.recover(quotes, "e-quotes")).toMatchObject({ status: "done" });
    expect(await taken()).toEqual([
      [0, "note", "for nobody", false],
      [1, "quote", 120, true],
      [2, "paid", { cents: 120 }, true],
    ]);
    const shown = await page("e-quotes");
    expect(shown).toContain('<tr data-seq="2">');
    expect(shown).toContain("not yet");
  });
});
