import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { type CheckpointStore, Executor, jsonlEventSink, StoreUnavailable } from "@durable/core";
import { Sealer } from "@durable/core/runner";
import { FlowRunner } from "@durable/flow";
import { DEMO_KEY, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { CardProcessor, tickets, ticketsRegistry } from "@durable-apps/shared/tickets";
import { noRunVerifies, readOneRun, readRuns, type RunView } from "../src/runs.js";
import { startViewer } from "../src/server.js";

// The demo as its package names it: a real run of it fills the store the viewer reads.
const demo = fileURLToPath(import.meta.resolve("@durable-apps/demo/main"));
const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "durable-viewer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The demo as a real process; `tmp` becomes its TMPDIR, so its default store and logs go there. */
function runDemo(args: string[], tmp?: string): string {
  const env = tmp === undefined ? process.env : { ...process.env, TMPDIR: tmp };
  return execFileSync(process.execPath, ["--import", "tsx", demo, ...args], { encoding: "utf8", env });
}

/** The viewer as a real process on a free port, until `stop`. */
async function viewerProcess(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", main, "--port", "0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const found = /viewer: (http:\/\/\S+)/.exec(stdout);
      if (found !== null) resolve(found[1]!);
    });
    child.once("exit", (code) => reject(new Error(`the viewer exited (${code}): ${stderr}`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return { url, stop };
}

const withoutKey = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env["DURABLE_KEY"];
  return env;
};

describe("the run viewer", () => {
  it("marks a call left in doubt, and reads without writing: a POST is refused", async () => {
    const storeUrl = `sqlite:${join(dir, "doubt.db")}`;
    // No decision and no terminal: worker 2 leaves email_tickets in doubt.
    execFileSync(process.execPath, ["--import", "tsx", demo, "--store", storeUrl, "--runs", "1"], { encoding: "utf8" });
    const store = await openStore(storeUrl);
    const sealer = Sealer.withKeys(DEMO_KEY);
    try {
      const [run] = await readRuns(store, sealer, eventLogFor(storeUrl));
      // Worker 2 claimed the run (segment 1), then stopped for a decision: the run waits on one.
      expect(run).toMatchObject({ status: "running", recovered: false, needsDecision: true, segment: 1 });
      expect(run!.steps.filter((s) => s.needsDecision)).toHaveLength(1);
      expect(run!.calls.map((c) => [c.tool, c.mark])).toEqual([
        ["hold_seats", "ran"],
        ["charge_card", "ran"],
        ["email_tickets", "in doubt"],
      ]);
      const viewer = await startViewer({
        store,
        sealer,
        eventLog: eventLogFor(storeUrl),
        label: storeUrl,
        port: 0,
        host: "127.0.0.1",
      });
      try {
        expect((await fetch(viewer.url, { method: "POST" })).status).toBe(405);
        const page = await (await fetch(`${viewer.url}/runs/${encodeURIComponent(run!.runId)}`)).text();
        expect(page).toContain('data-mark="in doubt"');
        expect(page).toContain("<code>run.needs-decision</code>");
        expect(page).toMatch(/stopped, in doubt: email_tickets \(started with no result; idempotency key [\w-]{43}\)/);
        expect(page).toContain('class="badge needs-decision">needs decision<');
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
      new FlowRunner(new Executor(ticketsRegistry(new CardProcessor(join(dir, "replay.cards.jsonl")))), {
        checkpoints,
        checkpointKey: DEMO_KEY,
        events,
      });
    // The first worker loses its store at the save after hold_seats: the call is done in the log, the step is not saved.
    let saves = 0;
    const cutOff: CheckpointStore = {
      save: (id, step, row, lease) =>
        ++saves === 2 ? Promise.reject(new StoreUnavailable("cut off")) : store.save(id, step, row, lease),
      latest: (id) => store.latest(id),
      listUnfinished: (flow, options) => store.listUnfinished(flow, options),
      renew: (id, segment, terms) => store.renew(id, segment, terms),
      release: (id, segment, owner) => store.release(id, segment, owner),
      leaseOf: (id) => store.leaseOf(id),
      delete: (id) => store.delete(id),
      recordCall: (id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed),
      calls: (id) => store.calls(id),
      close: () => store.close(),
    };
    try {
      await expect(runner(cutOff).run(tickets, { show: "Hamlet", seats: 2 }, { runId: "replay-1" })).rejects.toThrow(
        StoreUnavailable,
      );
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
    [
      ["--demo", "--store", "ftp://x"],
      /^--store "ftp:\/\/x" names no store this knows: use sqlite:<path>, redis:\/\/host:port or postgresql:\/\/.+\.\n$/,
    ],
    [
      ["--demo", "--store", "redis://127.0.0.1:1"],
      /^--store redis:\/\/127\.0\.0\.1:1 does not answer \(.*\): start that server, or pick another store, .+\.\n$/,
    ],
    [["--port", "x"], /^--port takes a whole number from 0 to 65535, not x\.\n$/],
    [
      ["--bogus"],
      /^pnpm viewer has no option --bogus: it takes --store, --events, --key, --key-file, --demo, --port, --host and --help\.\n$/,
    ],
    [
      ["--store", "sqlite:/tmp/x.db"],
      /^The viewer needs the key your workers seal with: give --key, --key-file or DURABLE_KEY \(or --demo for the demo's runs\)\.\n$/,
    ],
    [
      ["--store", "sqlite:/tmp/x.db", "--key", "short"],
      /^--key: checkpointKey is 5 bytes; a key needs at least 32 .+\n$/,
    ],
    [
      ["--store", "sqlite:/tmp/x.db", "--key-file", "/no/such/key"],
      /^--key-file \/no\/such\/key cannot be read \(.*ENOENT.*\): give the file that holds your workers' key\.\n$/,
    ],
  ])(
    "bad input %j: one line that says what to do, exit 2",
    (args, message) => {
      // A viewer that starts instead of refusing serves until killed: the timeout turns that into a failure.
      const result = spawnSync(process.execPath, ["--import", "tsx", main, ...args], {
        encoding: "utf8",
        env: withoutKey(),
        timeout: 30_000,
      });
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(message);
    },
    60_000,
  );
});

describe("the viewer on the demo's store", () => {
  it("with no demo run yet on this machine, says to run the demo first, without offering the same store again", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", main], {
      encoding: "utf8",
      env: { ...withoutKey(), TMPDIR: mkdtempSync(join(dir, "empty-tmp-")) },
      timeout: 30_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^No demo runs yet \(no .+durable-demo\): run pnpm demo first, or give --store\.\n$/);
  }, 60_000);

  it("keeps reading, every run readable, when the demo runs again under it", async () => {
    const tmp = mkdtempSync(join(dir, "again-tmp-"));
    runDemo(["--rerun-in-doubt"], tmp);
    // As a new user types it: `pnpm viewer` with no store, no key, after `pnpm demo`.
    const viewer = await viewerProcess([], { ...withoutKey(), TMPDIR: tmp });
    try {
      const before = (await (await fetch(`${viewer.url}/api/runs`)).json()) as RunView[];
      expect(before.map((r) => r.status)).toEqual(["done", "done", "done"]);
      const again = runDemo(["--rerun-in-doubt"], tmp);
      const runs = (await (await fetch(`${viewer.url}/api/runs`)).json()) as RunView[];
      expect(runs.map((r) => [r.status, r.problem])).toEqual([
        ["done", undefined],
        ["done", undefined],
        ["done", undefined],
      ]);
      expect(runs.map((r) => r.runId).sort()).toEqual([...new Set(again.match(/order-\d-\w+/g))].sort());
    } finally {
      await viewer.stop();
    }
  }, 180_000);
});

describe("the viewer's key", () => {
  const storeUrl = `sqlite:${join(dir, "keys.db")}`;
  const keyFile = join(dir, "demo.key");
  let demoRan = false;
  function demoRuns(): void {
    if (demoRan) return;
    runDemo(["--store", storeUrl, "--rerun-in-doubt"]);
    writeFileSync(keyFile, `${DEMO_KEY}\n`);
    demoRan = true;
  }
  const page = async (args: string[], env = withoutKey()) => {
    const viewer = await viewerProcess(["--store", storeUrl, ...args], env);
    try {
      return await (await fetch(viewer.url)).text();
    } finally {
      await viewer.stop();
    }
  };
  const readable = (html: string) => (html.match(/class="badge done"/g) ?? []).length;
  const wrongKey = (html: string) => (html.match(/wrong key\?/g) ?? []).length;

  it.each([
    ["--key-file", () => ["--key-file", keyFile]],
    ["--key", () => ["--key", DEMO_KEY]],
    ["--demo", () => ["--demo"]],
  ])(
    "%s: the workers' key verifies every run",
    async (_name, args) => {
      demoRuns();
      const html = await page(args());
      expect(readable(html)).toBe(3);
      expect(wrongKey(html)).toBe(0);
    },
    180_000,
  );

  it("DURABLE_KEY is the key when no option gives one", async () => {
    demoRuns();
    expect(readable(await page([], { ...process.env, DURABLE_KEY: DEMO_KEY }))).toBe(3);
    expect(
      wrongKey(await page([], { ...process.env, DURABLE_KEY: "another-key-that-is-at-least-32-bytes-long" })),
    ).toBe(1);
  }, 180_000);

  it('another key than the workers\': every run unreadable, and the page asks "wrong key?" once, at the top', async () => {
    demoRuns();
    const html = await page(["--key", "another-key-that-is-at-least-32-bytes-long"]);
    expect(wrongKey(html)).toBe(1);
    expect(html.indexOf("wrong key?")).toBeLessThan(html.indexOf("<h1>Runs</h1>"));
    expect((html.match(/class="badge unreadable"/g) ?? []).length).toBe(3);
    const store = await openStore(storeUrl);
    try {
      expect(
        noRunVerifies(
          await readRuns(store, Sealer.withKeys("another-key-that-is-at-least-32-bytes-long"), eventLogFor(storeUrl)),
        ),
      ).toBe(true);
      expect(noRunVerifies(await readRuns(store, Sealer.withKeys(DEMO_KEY), eventLogFor(storeUrl)))).toBe(false);
    } finally {
      await store.close();
    }
  }, 180_000);
});
