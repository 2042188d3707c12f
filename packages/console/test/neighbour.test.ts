import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { describe, expect, it } from "vitest";
import { type RunDetail, type RunningConsole, startConsole } from "../src/index.js";
import { headlessChromium } from "@durable/test-utils/chromium";
import { detail } from "./client.js";
import { KEY, payments, runner, seed } from "./fixture.js";

/*
 * Another server on this machine (a dev server, a compromised package's
 * listener) sees every request the operator's browser sends it. A cookie is
 * not tied to a port: a console's token cookie set for 127.0.0.1 reached
 * such a neighbour, which then approved a pending refund through the console.
 */

/** A local server that steals what a console's cookie holds and acts with it, as an attacker would. */
class Neighbour {
  readonly cookies: string[] = [];
  readonly stolen: string[] = [];
  readonly #server: Server;
  #acting: Promise<void> = Promise.resolve();

  constructor(
    readonly console_: RunningConsole,
    readonly runId: string,
  ) {
    this.#server = createServer((request, response) => {
      const header = request.headers.cookie ?? "";
      this.cookies.push(header);
      for (const pair of header.split(";")) {
        const [name = "", value = ""] = pair.trim().split("=");
        if (name.startsWith("durable_console_")) {
          this.stolen.push(value);
          this.#acting = this.#approve(value);
        }
      }
      response.writeHead(200, { "content-type": "text/html" }).end("<h1>a neighbour</h1>");
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve) =>
      this.#server.listen(0, "127.0.0.1", () => resolve((this.#server.address() as AddressInfo).port)),
    );
  }

  /** With a token: reads the run's page for its form token and pending call, and approves the call. */
  async #approve(token: string): Promise<void> {
    const headers = { authorization: `Bearer ${token}` };
    const api = this.console_.api ?? new URL(this.console_.url).origin;
    const at = `${api}/runs/${encodeURIComponent(this.runId)}`;
    const run = (await (
      await fetch(`${api}/api/runs/${encodeURIComponent(this.runId)}`, { headers })
    ).json()) as RunDetail;
    const page = await (await fetch(at, { headers })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
    const form = {
      csrf,
      step: String(run.step),
      action: "approve",
      "call.0": run.pending[0]?.callId ?? "",
      "approve.0": "approve",
    };
    await fetch(`${at}/actions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form),
      redirect: "manual",
    });
  }

  async close(): Promise<void> {
    await this.#acting.catch(() => undefined);
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

const chromium = headlessChromium();

describe("a console beside another local server, in headless Chromium", () => {
  it("its token cookie never reaches the neighbour, which cannot approve a pending refund through it", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    const dir = mkdtempSync(join(tmpdir(), "durable-console-neighbour-"));
    const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
    const console_ = await startConsole({ store, checkpointKey: KEY, label: "sqlite", port: 0, allowActions: true });
    const { paused } = await seed(store, join(dir, "events.jsonl"));
    const neighbour = new Neighbour(console_, paused);
    const page = await chromium.browser.newPage();
    try {
      const port = await neighbour.listen();
      // The operator opens the console as it printed itself, then the neighbour, by the loopback names it has
      // (the console's own random name is not the neighbour's to know).
      await page.goto(console_.url);
      await page.locator("h1").waitFor();
      for (const host of ["127.0.0.1", "localhost"]) await page.goto(`http://${host}:${port}/`);
      await neighbour.close();
      // Each page, and whatever else the browser asked for (its icon).
      expect(neighbour.cookies.length).toBeGreaterThanOrEqual(2);
      expect(neighbour.stolen).toEqual([]);
      const run = (await (
        await fetch(`${console_.api ?? new URL(console_.url).origin}/api/runs/${encodeURIComponent(paused)}`, {
          headers: { authorization: `Bearer ${console_.token}` },
        })
      ).json()) as RunDetail;
      expect(run.status).toBe("paused");
    } finally {
      await page.close();
      await neighbour.close().catch(() => undefined);
      await console_.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a page of another local server that posts to the console, in headless Chromium", () => {
  it("its forged event form is refused, and the run waiting for that event gets nothing", async (ctx) => {
    if (chromium.browser === undefined) return ctx.skip();
    const dir = mkdtempSync(join(tmpdir(), "durable-console-forged-"));
    const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
    await runner(store, join(dir, "events.jsonl")).run(payments, {}, { runId: "forged" });
    const console_ = await startConsole({ store, checkpointKey: KEY, label: "sqlite", port: 0, allowActions: true });
    // The worst case: the forger knows the console's own random name, and the operator is logged in.
    const target = `${new URL(console_.url).origin}/runs/forged/actions`;
    const fields = { action: "send-event", step: "1", name: "paid", payload: '"forged"', key: "forged-1" };
    const inputs = Object.entries(fields).map(([name, value]) => `<input name="${name}" value='${value}'>`);
    const forger = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(
        `<form method="post" action="${target}">${inputs.join("")}</form><script>document.forms[0].submit()</script>`,
      );
    });
    const page = await chromium.browser.newPage();
    try {
      const port = await new Promise<number>((resolve) =>
        forger.listen(0, "127.0.0.1", () => resolve((forger.address() as AddressInfo).port)),
      );
      await page.goto(console_.url);
      await page.locator("h1").waitFor();
      const posted = page.waitForResponse((response) => response.url() === target);
      await page.goto(`http://127.0.0.1:${port}/`);
      // SameSite=Strict keeps the token's cookie off a post from another site: the console does not know it.
      expect((await posted).status()).toBe(401);
      expect((await detail(console_, "forged")).inbox?.events).toEqual([]);
    } finally {
      await page.close();
      forger.closeAllConnections();
      await new Promise((resolve) => forger.close(resolve));
      await console_.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
