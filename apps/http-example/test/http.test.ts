import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// The example as its users run it: a server process and a worker process on one SQLite file, talked to over HTTP.

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const children: ChildProcess[] = [];
let folder = "";

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.kill("SIGKILL")) await once(child, "exit");
  rmSync(folder, { recursive: true, force: true });
});

/** Starts the bin with `args`; resolves with the process once a line of its stdout matches `ready`. */
async function bin(args: string[], ready: RegExp): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  for await (const line of createInterface({ input: child.stdout! })) if (ready.test(line)) return { child, line };
  throw new Error(`${args.join(" ")} exited before it printed ${ready}`);
}

/** A server and, unless `worker` is false, a worker on a fresh SQLite file; its base URL and outbox. */
async function example(worker = true) {
  folder = mkdtempSync(join(tmpdir(), "http-example-"));
  const files = ["--db", join(folder, "runs.db"), "--outbox", join(folder, "outbox.jsonl")];
  const { line } = await bin([...files, "--port", "0"], /^listening on /);
  if (worker) await bin([...files, "--role", "worker"], /^worker: /);
  const sent = () =>
    readFileSync(join(folder, "outbox.jsonl"), { encoding: "utf8", flag: "a+" }).split("\n").filter(Boolean);
  return { base: line.replace("listening on ", ""), sent };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "POST", body: JSON.stringify(body), headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** GETs the run until it is done (or 20 s passed). */
async function doneRun(base: string, runId: string): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const run = (await (await fetch(`${base}/runs/${runId}`)).json()) as Record<string, unknown>;
    if (run["status"] === "done") return run;
  }
  throw new Error(`run ${runId} was not done after 20 s`);
}

describe("the HTTP example, a server and a worker process on one SQLite file", () => {
  it("POST /runs answers 202 { runId } at once; the worker runs it; GET /runs/:id gives its result; the tool ran once", async () => {
    const { base, sent } = await example();
    const started = await post(`${base}/runs`, { name: "Ada" }, { "idempotency-key": "greet-ada" });
    expect(started).toEqual({ status: 202, body: { runId: "greet-ada" } });
    expect(await doneRun(base, "greet-ada")).toMatchObject({
      status: "done",
      result: { name: "Ada", message: "hello Ada" },
    });
    expect(sent()).toEqual([JSON.stringify({ runId: "greet-ada", name: "Ada" })]);

    // A retried POST (same Idempotency-Key): the same run, nothing new started, the tool not run again.
    expect(await post(`${base}/runs`, { name: "Ada" }, { "idempotency-key": "greet-ada" })).toEqual({
      status: 202,
      body: { runId: "greet-ada" },
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(sent()).toHaveLength(1);
    expect(await doneRun(base, "greet-ada")).toMatchObject({ status: "done" });
  }, 60_000);

  it("with no worker, POST /drain runs what is queued, as a cron-triggered route would", async () => {
    const { base, sent } = await example(false);
    const { body } = await post(`${base}/runs`, { name: "Bob" });
    expect(await (await fetch(`${base}/runs/${String(body["runId"])}`)).json()).toMatchObject({ status: "queued" });
    expect(await post(`${base}/drain`, {})).toMatchObject({
      status: 200,
      body: { finished: 1, gaveUp: 0, left: false },
    });
    expect(await doneRun(base, String(body["runId"]))).toMatchObject({ result: { message: "hello Bob" } });
    expect(sent()).toHaveLength(1);
  }, 60_000);

  it("answers a bad request with 400 and an unknown run with 404, each with its error", async () => {
    const { base } = await example(false);
    expect(await post(`${base}/runs`, { name: 5 })).toMatchObject({ status: 400, body: { error: expect.any(String) } });
    const response = await fetch(`${base}/runs/no-such-run`);
    expect(response.status).toBe(404);
  }, 60_000);
});
