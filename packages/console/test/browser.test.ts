import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CheckpointStore, RunWorker } from "@durable/core";
import { RedisCheckpointStore } from "@durable/store-redis";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { dropKeys, REDIS_URL, redisAnswers } from "@durable/test-utils/redis";
import type { Browser, Page } from "playwright-core";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningConsole, startConsole } from "../src/index.js";
import { headlessChromium } from "@durable/test-utils/chromium";
import { detail } from "./client.js";
import { failingCharges, KEY, orders, payments, runner, seed, type Seeded, worker } from "./fixture.js";

/** Screenshots the tests save (not committed; the README's are docs/console-*.png). */
const shots = fileURLToPath(new URL("./output/", import.meta.url));

/** A store the tests run on, and how to dispose of it. */
interface Backend {
  readonly name: string;
  open(): Promise<{ store: CheckpointStore; dispose(): Promise<void> }>;
  readonly available: () => Promise<boolean>;
}

const BACKENDS: readonly Backend[] = [
  {
    name: "SQLite",
    available: async () => true,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "durable-console-browser-"));
      const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
      return { store, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "Redis",
    available: redisAnswers,
    async open() {
      const prefix = `console-${Math.random().toString(36).slice(2, 10)}`;
      const store = new RedisCheckpointStore(() => createClient({ url: REDIS_URL }), { prefix });
      return { store, dispose: () => dropKeys(RedisCheckpointStore.keyPattern(prefix)) };
    },
  },
];

const chromium = headlessChromium();

beforeAll(() => {
  mkdirSync(shots, { recursive: true });
});

describe.each(BACKENDS)("the console in headless Chromium on $name", (backend) => {
  let store: CheckpointStore;
  let dispose: () => Promise<void>;
  let runs: Seeded;
  let console_: RunningConsole;
  let w: RunWorker | undefined;
  let page: Page;
  let skip = false;
  const dir = mkdtempSync(join(tmpdir(), "durable-console-events-"));
  const events = join(dir, "events.jsonl");

  beforeAll(async () => {
    skip = chromium.browser === undefined || !(await backend.available());
    if (skip) return;
    ({ store, dispose } = await backend.open());
    runs = await seed(store, events);
    console_ = await startConsole({
      store,
      checkpointKey: KEY,
      label: backend.name,
      port: 0,
      events,
      allowActions: true,
      by: "ops@browser",
      refreshMs: 500,
      schemas: { orders: orders.schema },
    });
    page = await (chromium.browser as Browser).newPage({ viewport: { width: 1280, height: 900 } });
    // The printed address: its token becomes a cookie, and the page loads without it.
    await page.goto(console_.url);
  }, 60_000);

  afterAll(async () => {
    await w?.stop();
    await page?.close();
    await console_?.close();
    await store?.close();
    await dispose?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const runRow = (runId: string) => page.locator(`table.runs tbody tr[data-run-id="${runId.replaceAll('"', '\\"')}"]`);
  const openRun = async (runId: string) => {
    await page.goto(`${new URL(console_.url).origin}/runs/${encodeURIComponent(runId)}`);
    await page.locator("h1").waitFor();
  };
  /** Reloads the run's page until its status badge says `status` (the worker acts on what was recorded). */
  const untilStatus = async (runId: string, status: string) => {
    await expect
      .poll(
        async () => {
          await openRun(runId);
          return page.locator("h1 .badge").first().textContent();
        },
        { timeout: 15_000, interval: 200 },
      )
      .toBe(status);
  };

  it("lists the runs with their marks and shows hostile ids as text", async (ctx) => {
    if (skip) return ctx.skip();
    expect(new URL(page.url()).search).toBe("");
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBeGreaterThanOrEqual(6);
    expect(await runRow(runs.paused).locator(".badge.needs-approval").count()).toBe(1);
    expect(await runRow(runs.inDoubt).locator(".badge.needs-decision").count()).toBe(1);
    expect(await runRow(runs.failed).locator(".badge.failed").count()).toBe(1);
    expect(await runRow(runs.hostile).locator("a").textContent()).toBe(runs.hostile);
    if (backend.name === "SQLite") await page.screenshot({ path: join(shots, "console-list.png"), fullPage: true });
  });

  it("filters by name and status and searches by run id", async (ctx) => {
    if (skip) return ctx.skip();
    await page.getByLabel("Flow or loop name").fill("refunds");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/name=refunds/);
    expect(
      await page.locator("table.runs tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run-id"))),
    ).toEqual([runs.paused]);
    await page.getByRole("link", { name: "Clear" }).click();
    await page.getByRole("checkbox", { name: "failed" }).check();
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=failed/);
    const statuses = await page
      .locator("table.runs tbody tr")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-status")));
    expect(new Set(statuses)).toEqual(new Set(["failed"]));
    await page.getByRole("link", { name: "Clear" }).click();
    await page.getByLabel("Run id starts with").fill(runs.loop);
    await page.keyboard.press("Enter");
    await page.waitForURL(/q=/);
    expect(await page.locator("table.runs tbody tr").count()).toBe(1);
  });

  it("shows a run's timeline with what each step changed", async (ctx) => {
    if (skip) return ctx.skip();
    await openRun(runs.done);
    const step1 = page.locator('details.step[data-step="1"]');
    expect(await step1.locator("table.changes th code", { hasText: "$.state.note" }).count()).toBe(1);
    expect(await step1.locator("table.changes").textContent()).toContain("held 2 for Hamlet");
    expect(await page.locator('table.calls tr[data-state="done"]').count()).toBe(3);
    await openRun(runs.inDoubt);
    expect(await page.locator('table.calls tr[data-state="in doubt"]').count()).toBe(1);
    if (backend.name === "SQLite") await page.screenshot({ path: join(shots, "console-run.png") });
  });

  it("approves, decides a call in doubt, retries and cancels; the worker acts on each", async (ctx) => {
    if (skip) return ctx.skip();
    w = worker(store, events);
    await openRun(runs.paused);
    await page.getByRole("radio", { name: "Approve" }).check();
    await page.getByLabel("Reason", { exact: true }).first().fill("customer asked");
    await page.getByRole("button", { name: "Record answers" }).click();
    expect(await page.locator(".notice").textContent()).toContain("Recorded 1 answer");
    await untilStatus(runs.paused, "done");
    expect(await page.locator("details.step .badge.operator").first().textContent()).toBe("approved by ops@browser");

    await openRun(runs.inDoubt);
    await page.getByLabel("Decision").selectOption("result");
    await page.getByLabel("Result (JSON)").fill('"mailed by hand"');
    await page.getByRole("button", { name: "Record decision" }).click();
    expect(await page.locator(".notice").textContent()).toContain("Decision recorded");
    await untilStatus(runs.inDoubt, "done");
    expect(await page.locator('table.calls tr[data-marks~="decided"]').textContent()).toContain("mailed by hand");

    failingCharges.delete(runs.failed);
    await openRun(runs.failed);
    await page.getByRole("button", { name: "Retry the run" }).click();
    await untilStatus(runs.failed, "done");

    const { paused: another } = await seed(store, events);
    await openRun(another);
    await page.getByLabel("Reason", { exact: true }).last().fill("duplicate");
    await page.getByRole("button", { name: "Cancel the run" }).click();
    expect(await page.locator(".notice").textContent()).toContain("Cancelled");
    expect(await page.locator("h1").textContent()).toContain("cancelled");
  }, 60_000);

  it("shows what a run waiting for an event waits for; the operator sends it, and the worker finishes the run", async (ctx) => {
    if (skip) return ctx.skip();
    w ??= worker(store, events);
    const runId = `${runs.done}-pay`;
    expect(await runner(store, events).run(payments, {}, { runId })).toMatchObject({ status: "asleep" });
    await page.goto(new URL(console_.url).origin);
    expect(await runRow(runId).locator(".badge").allTextContents()).toEqual(["running", "awaits event"]);
    expect(await runRow(runId).locator(".until").textContent()).toMatch(
      /^waiting for event paid until \d{4}-\d\d-\d\d /,
    );
    await openRun(runId);
    expect(await page.locator(".waits").textContent()).toMatch(
      /^Waiting for event paid until \d{4}-.*: it holds no worker/,
    );
    expect(await page.getByLabel("Event name").inputValue()).toBe("paid");
    if (backend.name === "SQLite") await page.screenshot({ path: join(shots, "console-event.png") });
    // A slip first: refused in one line, and the form keeps what was typed.
    await page.getByLabel("Payload (JSON)").fill('{"cents": 500');
    const key = await page.getByLabel("Idempotency key").inputValue();
    await page.getByRole("button", { name: "Send the event" }).click();
    expect(await page.locator('.problem[role="alert"]').textContent()).toBe(
      'Refused: The payload is not JSON: {"cents": 500',
    );
    expect(await page.getByLabel("Payload (JSON)").inputValue()).toBe('{"cents": 500');
    expect(await page.getByLabel("Idempotency key").inputValue()).toBe(key);
    await page.getByLabel("Payload (JSON)").fill('{"cents": 500}');
    await page.getByRole("button", { name: "Send the event" }).click();
    expect(await page.locator(".notice").textContent()).toBe(
      'Sent event "paid" as seq 0; the run\'s next wait for it takes it.',
    );
    await untilStatus(runId, "done");
    // The event woke it: no worker left it running, so nothing was recovered.
    expect(await page.locator("h1 .badge").allTextContents()).toEqual(["done"]);
    expect(await page.locator('table.inbox tr[data-seq="0"]').textContent()).toContain(key);
    expect(await page.locator('table.inbox tr[data-seq="0"] td').nth(4).textContent()).toBe("taken");
  }, 60_000);

  it("forks a done run from step 1 with four seats instead of two; the worker finishes the fork, the original is as it was", async (ctx) => {
    if (skip) return ctx.skip();
    const fork = `${runs.done}-four-seats`;
    const original = await detail(console_, runs.done);
    expect(original).toMatchObject({ status: "done", step: 3 });
    await openRun(runs.done);
    // The step that saved the run done offers no fork.
    expect(await page.locator('details.step[data-step="3"] a.fork').count()).toBe(0);
    await page.locator('details.step[data-step="1"]').getByRole("link", { name: "Fork from step 1" }).click();
    await page.getByRole("heading", { name: `Fork ${runs.done} from step 1` }).waitFor();
    const state = page.getByLabel("State at step 1 (JSON)");
    const shown = JSON.parse(await state.inputValue()) as { seats: number };
    expect(shown).toEqual({ show: "Hamlet", seats: 2, note: "held 2 for Hamlet" });
    await state.fill(JSON.stringify({ ...shown, seats: 4 }, null, 2));
    await page.getByLabel("New run id (optional)").fill(fork);
    await page.getByLabel("Reason (optional)").fill("four seats after all");
    await page.getByRole("button", { name: "Fork the run" }).click();
    await page.waitForURL(/\?done=/);
    expect(await page.locator(".notice").textContent()).toContain(`Forked from ${runs.done} at step 1`);
    expect(await page.locator(".forked-from").textContent()).toBe(`Forked from ${runs.done} at step 1.`);
    expect(await page.locator(".forked-from a").getAttribute("href")).toBe(`/runs/${runs.done}`);
    expect(await page.locator("details.step .badge.operator").allTextContents()).toEqual(["forked by ops@browser"]);
    if (backend.name === "SQLite") await page.screenshot({ path: join(shots, "console-fork.png") });
    w ??= worker(store, events);
    await untilStatus(fork, "done");
    expect((await detail(console_, fork)).steps.at(-1)?.program).toMatchObject({
      state: { show: "Hamlet", seats: 4, note: "mailed Hamlet" },
    });
    expect(await page.locator('table.calls tr:has(code:text-is("charge_card"))').textContent()).toContain(
      "charged $160",
    );
    // The original is only read.
    expect(await detail(console_, runs.done)).toEqual(original);
  }, 60_000);

  it("refuses an action once the run moved on since the page was loaded, and says so", async (ctx) => {
    if (skip) return ctx.skip();
    const { paused } = await seed(store, events);
    await openRun(paused);
    // Another operator acts first, from another page.
    const other = await (chromium.browser as Browser).newPage();
    await other.goto(console_.url);
    await other.goto(`${new URL(console_.url).origin}/runs/${encodeURIComponent(paused)}`);
    await other.getByRole("radio", { name: "Deny" }).check();
    await other.getByRole("button", { name: "Record answers" }).click();
    await other.close();
    await page.locator("#run-changed").waitFor({ state: "visible", timeout: 5_000 });
    await page.getByRole("radio", { name: "Approve" }).check();
    await page.getByRole("button", { name: "Record answers" }).click();
    expect(await page.locator('.problem[role="alert"]').textContent()).toContain("changed since step");
  });

  it("is usable by keyboard, and every control has a label", async (ctx) => {
    if (skip || backend.name !== "SQLite") return ctx.skip();
    await page.goto(new URL(console_.url).origin);
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    const unlabelled = async () =>
      page.evaluate(() =>
        [...document.querySelectorAll("input:not([type=hidden]), select, textarea, button")]
          .filter((el) => {
            const control = el as HTMLInputElement;
            const named =
              control.labels?.length ||
              el.getAttribute("aria-label") ||
              (el.tagName === "BUTTON" && el.textContent?.trim());
            return !named;
          })
          .map((el) => el.outerHTML),
      );
    expect(await unlabelled()).toEqual([]);
    const { paused } = await seed(store, events);
    await openRun(paused);
    expect(await unlabelled()).toEqual([]);
    // Every table names its rows and columns.
    expect(await page.locator("table:not(:has(caption))").count()).toBe(0);
    // Approve and submit with the keyboard alone.
    await page.getByRole("radio", { name: "Approve" }).focus();
    await page.keyboard.press("Space");
    await page.getByRole("button", { name: "Record answers" }).focus();
    await page.keyboard.press("Enter");
    await page.locator(".notice").waitFor();
  });
});
