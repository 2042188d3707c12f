import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approveRun, cancelRun, type RunWorker } from "@durable/core";
import { DurableRun, readEnvelope, Sealer } from "@durable/core/runner";
import { type LoopModel, runToolLoop } from "@durable/loop";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningConsole, startConsole } from "../src/index.js";
import { headlessChromium } from "@durable/test-utils/chromium";
import { KEY, naps, refunds, registry, reminders, runner, seed, type Seeded, worker } from "./fixture.js";

/*
 * What a run waits for, as the list and the run's page say it in a browser:
 * one run in each state (an approval, a denial not yet spent and spent, a
 * conversation between turns, a decision, a retry time, a worker), and
 * recoveries told apart from next turns and operators' actions.
 */

const chromium = headlessChromium();
const dir = mkdtempSync(join(tmpdir(), "durable-console-waiting-"));
const events = join(dir, "events.jsonl");
const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
const operator = { checkpoints: store, checkpointKey: KEY, by: "ops@browser" };
const order = { show: "Hamlet", seats: 2 };

/** A model that answers every turn in words, with no tool call: a conversation's turn stops at once. */
const chat: LoopModel = { reply: async () => ({ text: "Noted.", toolCalls: [] }) };
const chatOptions = (runId: string) => ({
  runId,
  name: "support-chat",
  conversation: true,
  checkpoints: store,
  checkpointKey: KEY,
});

describe("what a run waits for, in headless Chromium", () => {
  let console_: RunningConsole;
  let page: Page;
  let seeded: Seeded;
  let w: RunWorker | undefined;
  let retrying: Promise<unknown>;
  const ids = { denied: "w-denied", chat: "w-chat", retry: "w-retry" };

  beforeAll(async () => {
    if (chromium.browser === undefined) return;
    seeded = await seed(store, events, "w");
    const r = runner(store, events);
    await r.run(refunds, order, { runId: ids.denied });
    await approveRun(
      ids.denied,
      { [await pendingCall(ids.denied)]: { approved: false, reason: "no refunds" } },
      operator,
    );
    await runToolLoop(chat, registry(), [{ role: "user", content: "Hello" }], chatOptions(ids.chat));
    await runToolLoop(chat, registry(), [{ role: "user", content: "Still there?" }], chatOptions(ids.chat));
    // Driven here: its call fails and the run sleeps ten minutes under its lease before the next attempt.
    retrying = r.run(reminders, { to: "ada@example.com" }, { runId: ids.retry }).catch((error: unknown) => error);
    console_ = await startConsole({ store, checkpointKey: KEY, label: "SQLite", port: 0, events, allowActions: true });
    page = await (chromium.browser as Browser).newPage();
    await page.goto(console_.url);
  }, 60_000);

  afterAll(async () => {
    // Cancelled, the run driven here is fenced at its next renewal and gives up its ten-minute wait.
    await cancelRun(ids.retry, "test over", operator).catch(() => undefined);
    await Promise.race([retrying, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    await w?.stop();
    await page?.close();
    await console_?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function pendingCall(runId: string): Promise<string> {
    const latest = await DurableRun.latest(store, Sealer.withKeys(KEY), runId);
    return readEnvelope(runId, latest.data).pending[0]?.callId ?? "";
  }

  const origin = () => new URL(console_.url).origin;
  const marksOf = async (runId: string) => {
    await page.goto(origin());
    return page.locator(`tr[data-run-id="${runId}"] .badge`).allTextContents();
  };
  const open = async (runId: string) => {
    await page.goto(`${origin()}/runs/${encodeURIComponent(runId)}`);
    await page.locator("h1").waitFor();
  };
  const waitsFor = () => page.locator(".waits").getAttribute("data-waits-for");

  it("a paused run waits for an approval; a run waiting for a decision needs one; a recovery is marked", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    expect(await marksOf(seeded.paused)).toEqual(["paused", "needs approval"]);
    await open(seeded.paused);
    expect(await waitsFor()).toBe("approval");
    expect(await page.getByRole("button", { name: "Record answers" }).count()).toBe(1);

    expect(await marksOf(seeded.inDoubt)).toEqual(["running", "needs decision"]);
    await open(seeded.inDoubt);
    expect(await waitsFor()).toBe("decision");
    expect(await page.locator("h1 .badge").allTextContents()).toEqual(["running", "recovered", "needs decision"]);
    expect(await page.locator("details.step .badge.recovered").count()).toBe(1);
  });

  it("a conversation between turns awaits its next message, and a next turn is no recovery", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    expect(await marksOf(ids.chat)).toEqual(["paused", "awaits next message"]);
    await open(ids.chat);
    expect(await waitsFor()).toBe("next message");
    expect(await page.locator("h1 .badge").allTextContents()).toEqual(["paused", "awaits next message"]);
    expect(await page.locator(".badge.recovered").count()).toBe(0);
    expect(await page.locator("details.step .badge.claim").count()).toBe(1);
    expect(await page.getByRole("button", { name: "Record answers" }).count()).toBe(0);
    // Its messages read as a conversation: who speaks and what they say.
    const said = await page
      .locator("ol.messages > li")
      .evaluateAll((items) =>
        items.map((li) => [li.getAttribute("data-role"), li.querySelector(".says")?.textContent]),
      );
    expect(said).toEqual([
      ["user", "Hello"],
      ["assistant", "Noted."],
      ["user", "Still there?"],
      ["assistant", "Noted."],
    ]);
  });

  it("a loop's tool calls read as asked for and answered", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    await open(seeded.loop);
    expect(await page.locator("ol.messages .asks li code").first().textContent()).toBe("hold_seats");
    expect(await page.locator('ol.messages li[data-role="tool"] .who').textContent()).toBe("tool hold_seats answered");
    expect(await page.locator('ol.messages li[data-role="tool"] .says').textContent()).toContain("held 2 for Hamlet");
  });

  it("a denial is a denial before and after a worker spends it, marked once, and no retry is offered", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    expect(await marksOf(ids.denied)).toEqual(["running", "awaits a worker"]);
    await open(ids.denied);
    expect(await waitsFor()).toBe("worker");
    expect(await page.locator("table.calls tr").last().getAttribute("data-state")).toBe("denied");
    expect(await page.locator("details.step .badge.operator").allTextContents()).toEqual(["denied by ops@browser"]);

    w = worker(store, events);
    await expect.poll(async () => (await marksOf(ids.denied))[0], { timeout: 15_000, interval: 200 }).toBe("failed");
    expect(await marksOf(ids.denied)).toEqual(["failed"]);
    await open(ids.denied);
    expect(await page.locator(".waits").count()).toBe(0);
    expect(await page.locator("table.calls tr").last().getAttribute("data-state")).toBe("denied");
    // The worker's claim carries the operator's mark on: one action, one marked step.
    expect(await page.locator("details.step .badge.operator").allTextContents()).toEqual(["denied by ops@browser"]);
    expect(await page.locator(".badge.recovered").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Retry the run" }).count()).toBe(0);
    expect(await page.locator("#act-retry").locator("..").textContent()).toContain("an approval was denied");
  });

  it("a run asleep says until when, and holds no worker", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    expect(await runner(store, events).run(naps, {}, { runId: "w-nap" })).toMatchObject({ status: "asleep" });
    expect(await marksOf("w-nap")).toEqual(["running", "asleep"]);
    expect(await page.locator('tr[data-run-id="w-nap"] .until').textContent()).toMatch(
      /^asleep until \d{4}-\d\d-\d\d /,
    );
    await open("w-nap");
    expect(await waitsFor()).toBe("wake time");
    expect(await page.locator(".waits").textContent()).toMatch(/Asleep: .* wakes it \d{4}-\d\d-\d\d/);
    // Its lease is the sleep's, not a worker's: a cancel fences no one.
    expect(await page.locator("#act-cancel").locator("..").textContent()).not.toContain("A worker holds it");
  });

  it("a run whose call waits between attempts is retrying, and says when", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    await expect
      .poll(async () => marksOf(ids.retry), { timeout: 15_000, interval: 200 })
      .toEqual(["running", "retrying"]);
    await open(ids.retry);
    expect(await waitsFor()).toBe("retry time");
    expect(await page.locator(".waits").textContent()).toMatch(/next attempt starts \d{4}-\d\d-\d\d/);
    expect(await page.locator("table.calls tr").last().getAttribute("data-state")).toBe("retrying");
    // The failed attempt's error is on its call.
    expect(await page.locator("table.calls tr").last().locator(".failure").textContent()).toBe(
      "attempt 1 failed: Error: mail server busy",
    );
    expect(await page.getByRole("button", { name: "Record decision" }).count()).toBe(0);
  });
});
