import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sendEvent } from "@durable/core";
import { Flow } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ListedRun, type RunningConsole, startConsole } from "../src/index.js";
import { act, detail, formToken, get, post } from "./client.js";
import { closeAll, KEY, orders, payments, runner, worker } from "./fixture.js";

/*
 * A run waiting for an event, as the console shows it (what it waits for,
 * until when, its inbox), and the operator's action that sends it one: it
 * goes through `sendEvent` and the console's guards like every other action.
 */

const dir = mkdtempSync(join(tmpdir(), "durable-console-events-"));
const events = join(dir, "events.jsonl");
const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
const ids = { waits: "e-waits", forever: "e-forever", done: "e-done" };
let actor: RunningConsole;
let reader: RunningConsole;

beforeAll(async () => {
  const r = runner(store, events);
  await r.run(payments, {}, { runId: ids.waits });
  await r.run(payments, { timeoutMs: null }, { runId: ids.forever });
  await r.run(orders, { show: "Hamlet", seats: 2 }, { runId: ids.done });
  const common = { store, checkpointKey: KEY, label: "sqlite", port: 0, token: "send-event-token-0123456789" };
  actor = await startConsole({ ...common, allowActions: true });
  reader = await startConsole(common);
}, 60_000);

afterAll(() => closeAll(dir, actor, reader, store));

const page = async (runId: string) => (await get(actor, `/runs/${encodeURIComponent(runId)}`)).text();
/** The value a page's field holds: an input's `value`, a textarea's text. */
const field = (html: string, name: string) =>
  new RegExp(`name="${name}"[^>]*value="([^"]*)"|name="${name}"[^>]*>([^<]*)</textarea>`).exec(html)?.slice(1).join("");
const send = (runId: string, fields: Record<string, string>) => act(actor, runId, { action: "send-event", ...fields });
/** The notice a page shows after a redirect, or the problem a refusal shows, as text. */
const said = async (response: Response) => {
  const location = response.headers.get("location");
  const html = location === null ? await response.text() : await (await get(actor, location)).text();
  const text = /<p class="(?:notice|problem)" role="\w+">([^<]*)<\/p>/.exec(html)?.[1];
  return text?.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
};

describe("a run waiting for an event, in the console", () => {
  it("says which event it waits for and until when, in the list and on its page, and prefills the form", async () => {
    const list = (await (await get(reader, "/api/runs")).json()) as { runs: ListedRun[] };
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
    const html = await (await get(reader, "/")).text();
    expect(html).toMatch(/waiting for event paid until \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/);
    expect(html).toContain("waiting for event paid with no timeout");

    const shown = await page(ids.waits);
    expect(shown).toContain('data-waits-for="event"');
    expect(shown).toMatch(/Waiting for event paid until \d{4}-.*: it holds no worker/);
    expect(shown).toContain("No event sent yet.");
    expect(shown).not.toContain("A worker holds it");
    expect(field(shown, "name")).toBe("paid");
    expect(field(shown, "payload")).toBe("null");
    expect(field(shown, "key")).toMatch(/^[0-9a-f-]{36}$/);
    // A new key per page: a second page is another send, a second submit of one page is not.
    expect(field(await page(ids.waits), "key")).not.toBe(field(shown, "key"));
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
  const taken = async () =>
    (await detail(reader, "e-quotes")).inbox?.events.map((e) => [e.seq, e.name, e.payload, e.taken]);

  it("lists every event sent, each marked taken once a wait of this round or an earlier one took it", async () => {
    const r = runner(store, events);
    await r.run(quotes, {}, { runId: "e-quotes" });
    await deliver("note", "for nobody");
    await deliver("quote", 120);
    // A recovery takes the quote and waits for the payment, in the same round.
    expect(await r.recover(quotes, "e-quotes")).toMatchObject({ status: "asleep" });
    expect((await detail(reader, "e-quotes")).waiting).toMatchObject({ for: "event", names: ["paid"] });
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

describe("the operator sends an event (--allow-actions)", () => {
  it("sends it as seq 0, a second submit is a duplicate, and the worker serving the run takes it", async () => {
    const sent = await send(ids.forever, { name: "paid", payload: '{"cents":500}', key: "pay-1" });
    expect(sent.status).toBe(303);
    expect(await said(sent)).toBe('Sent event "paid" as seq 0; the run\'s next wait for it takes it.');
    const again = await send(ids.forever, { name: "paid", payload: '{"cents":500}', key: "pay-1" });
    expect(await said(again)).toBe(
      'Duplicate: the inbox holds an event with key "pay-1" already, and nothing was sent.',
    );
    const before = await detail(actor, ids.forever);
    // The event released the wait's lease: the run waits for a worker now.
    expect(before.waiting).toEqual({ for: "worker" });
    expect(before.inbox?.events).toEqual([
      { seq: 0, key: "pay-1", name: "paid", at: expect.any(String), payload: { cents: 500 }, taken: false },
    ]);
    // Nothing but the event was written: no checkpoint, no operator's mark.
    expect(before.step).toBe(1);
    expect(before.steps.some((step) => step.operator !== undefined)).toBe(false);

    const w = worker(store, events);
    try {
      await expect.poll(async () => (await detail(actor, ids.forever)).status, { timeout: 10_000 }).toBe("done");
    } finally {
      await w.stop();
    }
    const after = await detail(actor, ids.forever);
    expect(after.inbox?.events.map((e) => [e.seq, e.taken])).toEqual([[0, true]]);
    expect(after.recoveries).toBe(0);
    expect(after.steps.at(-1)?.program).toMatchObject({ state: { paid: '{"cents":500}' } });
    const shown = await page(ids.forever);
    expect(shown).toContain('<table class="inbox">');
    expect(shown).not.toContain('aria-labelledby="act-event"');
  }, 30_000);

  it("refuses an ended run, a payload that is not JSON and a bad name in one line each, keeping what was typed", async () => {
    // Posted from a page loaded while the run went on: an ended run's page has no form.
    const csrf = await formToken(actor, ids.waits);
    const fields = { action: "send-event", step: "1", name: "paid", payload: '{"cents":1}', key: "late-1" };
    const ended = await post(actor, ids.done, { ...fields, csrf });
    expect(ended.status).toBe(409);
    const html = await ended.clone().text();
    expect(await said(ended)).toBe('Refused: Run "e-done" ended (done): it takes no more events.');
    expect([field(html, "name"), field(html, "payload"), field(html, "key")]).toEqual([
      "paid",
      "{&#34;cents&#34;:1}",
      "late-1",
    ]);

    const badJson = await send(ids.waits, { name: "paid", payload: "{oops", key: "k-json" });
    expect(badJson.status).toBe(400);
    expect(await said(badJson)).toBe("Refused: The payload is not JSON: {oops");
    const empty = await send(ids.waits, { name: "paid", payload: " ", key: "k-empty" });
    expect(await said(empty)).toBe("Refused: The payload is not JSON: it is empty (null for none)");
    for (const name of ["", "x".repeat(129)]) {
      const badName = await send(ids.waits, { name, payload: "1", key: "k-name" });
      expect(badName.status).toBe(400);
      const text = await badName.text();
      expect(text).toContain("Refused: sendEvent: an event&#39;s name must be a string of 1 to 128 characters.");
      expect(field(text, "name")).toBe(name);
      expect(field(text, "key")).toBe("k-name");
    }
    const noKey = await send(ids.waits, { name: "paid", payload: "1", key: "" });
    expect(noKey.status).toBe(400);
    expect((await detail(actor, ids.waits)).inbox?.events).toEqual([]);
  });

  it("refuses a forged post: without the page's form token, with another console's, without the token, read only", async () => {
    const fields = { action: "send-event", step: "1", name: "paid", payload: "1", key: "forged-1" };
    expect((await post(actor, ids.waits, fields)).status).toBe(403);
    const other = await startConsole({ store, checkpointKey: KEY, label: "x", port: 0, allowActions: true });
    try {
      const theirs = await formToken(other, ids.waits);
      expect(theirs).not.toBe("");
      expect((await post(actor, ids.waits, { ...fields, csrf: theirs })).status).toBe(403);
    } finally {
      await other.close();
    }
    const anonymous = await fetch(`${actor.api}/runs/${ids.waits}/actions`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...fields, csrf: await formToken(actor, ids.waits) }),
    });
    expect(anonymous.status).toBe(401);
    // A console that only reads shows no form and takes no post.
    expect(await (await get(reader, `/runs/${ids.waits}`)).text()).not.toContain('value="send-event"');
    expect((await post(reader, ids.waits, fields)).status).toBe(403);
    expect((await detail(actor, ids.waits)).inbox?.events).toEqual([]);
  });
});

describe("the operator wakes a run now (--allow-actions)", () => {
  it("wakes a run waiting for an event with a timeout: its wait times out and the worker finishes it; no wake for a wait with none", async () => {
    const r = runner(store, events);
    await r.run(payments, {}, { runId: "e-wake" });
    const shown = await page("e-wake");
    expect(shown).toContain('value="wake"');
    expect(await page(ids.forever)).not.toContain('value="wake"');
    const woken = await act(actor, "e-wake", { action: "wake" });
    expect(woken.status).toBe(303);
    expect(await said(woken)).toMatch(/^Woken at step \d+; the worker serving the run goes on with it now\.$/);
    expect((await detail(actor, "e-wake")).steps.at(-1)?.operator).toMatchObject({
      action: "wake",
      by: expect.any(String),
    });
    const w = worker(store, events);
    try {
      for (let i = 0; i < 100 && (await store.latest("e-wake")).status !== "done"; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await w.stop();
    }
    expect((await detail(actor, "e-wake")).status).toBe("done");
    expect(await page("e-wake")).not.toContain('value="wake"');
  });
});
