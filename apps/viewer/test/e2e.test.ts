import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sealer } from "@durable/core/runner";
import { DEMO_KEY, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { startViewer } from "../src/server.js";

const CHROMIUM = "/usr/bin/chromium";
// The demo as its package names it: a real run of it fills the store the viewer reads.
const demo = fileURLToPath(import.meta.resolve("@durable-apps/demo/main"));
/** Screenshots the test saves (not committed; the README's is docs/viewer.png). */
const shots = fileURLToPath(new URL("./output/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "durable-viewer-e2e-"));
const storeUrl = `sqlite:${join(dir, "runs.db")}`;

function chromiumPresent(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env["CI"] === "true")
    throw new Error(`No Chromium at ${CHROMIUM}; CI needs it (apt-get install chromium).`);
  console.warn(
    `Skipping the viewer's browser test: no Chromium at ${CHROMIUM}. Install it with: apt-get install chromium`,
  );
  return false;
}

describe.skipIf(!chromiumPresent())("the run viewer in headless Chromium", () => {
  let browser: Browser;
  let viewer: Awaited<ReturnType<typeof startViewer>>;
  let close: () => Promise<void>;

  beforeAll(async () => {
    // The demo's crash and recovery: worker 1 dies inside email_tickets, worker 2 reruns it.
    const out = execFileSync(process.execPath, ["--import", "tsx", demo, "--store", storeUrl, "--rerun-in-doubt"], {
      encoding: "utf8",
    });
    expect(out).toContain("recovered 1 run(s)");
    const store = await openStore(storeUrl);
    viewer = await startViewer({
      store,
      sealer: Sealer.withKeys(DEMO_KEY),
      eventLog: eventLogFor(storeUrl),
      label: storeUrl,
      port: 0,
      host: "127.0.0.1",
    });
    close = async () => {
      await viewer.close();
      await store.close();
    };
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    mkdirSync(shots, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the runs, marks the recovered one, and shows its calls marked rerun and ran", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 820 } });
    await page.goto(viewer.url);
    const rows = page.locator("table.runs tbody tr");
    await expect.poll(() => rows.count()).toBe(3);
    const recovered = page.locator("table.runs tbody tr", { has: page.locator(".badge.recovered") });
    expect(await recovered.count()).toBe(1);
    const runId = await recovered.getAttribute("data-run-id");
    expect(runId).toMatch(/^order-3-/);
    expect(await recovered.locator(".badge.done").count()).toBe(1);
    await page.screenshot({ path: join(shots, "viewer-runs.png"), fullPage: true });

    await recovered.locator("a").click();
    await page.waitForURL(`**/runs/${runId}`);
    await expect.poll(() => page.locator("h1").textContent()).toContain(runId!);
    const mark = (tool: string) =>
      page.locator("table.calls tr", { has: page.locator(`code:text-is("${tool}")`) }).getAttribute("data-mark");
    expect(await mark("hold_seats")).toBe("ran");
    expect(await mark("charge_card")).toBe("ran");
    expect(await mark("email_tickets")).toBe("rerun");
    expect(await page.locator("table.events").textContent()).toContain("run.recovered");
    expect(await page.locator(".badge", { hasText: "claimed by a recovery" }).count()).toBe(1);
    // The first recovery claimed the run, then stopped for a decision on email_tickets.
    expect(await page.locator(".badge", { hasText: "claimed, stopped for a decision" }).count()).toBe(1);
    expect(await page.locator("table.events").textContent()).toContain("run.needs-decision");
    await page.screenshot({ path: join(shots, "viewer-run.png"), fullPage: true });
    await page.close();
  }, 120_000);
});
