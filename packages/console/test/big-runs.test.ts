import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStore, Executor, ToolRegistry } from "@durable/core";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type RunDetail, type RunningConsole, startConsole } from "../src/index.js";
import { KEY } from "./fixture.js";

/*
 * Big runs: a value of 300 KB is cut in the page with a link to the whole,
 * a refresh reads the latest checkpoint alone, and a run of 250 steps opens
 * on its newest 100 with links to the rest.
 */

const TOKEN = "console-test-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "durable-console-big-"));
const sqlite = new SQLiteCheckpointStore(join(dir, "runs.db"));
/** How often the console asked the store for a run's whole history. */
let historyReads = 0;
const store: CheckpointStore = new Proxy(sqlite, {
  get(target, name, receiver) {
    if (name === "history") historyReads++;
    const value = Reflect.get(target, name, receiver) as unknown;
    return typeof value === "function" ? value.bind(target) : value;
  },
});
const big = "report line\n".repeat(25_000);
const STEPS = 250;
let console_: RunningConsole;

const get = (path: string) => fetch(`${console_.api}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

beforeAll(async () => {
  const registry = new ToolRegistry()
    .tool("fetch_report", () => big)
    .tool("tick", (a: { n: number }) => a.n + 1, { idempotent: true });
  const runner = new FlowRunner(new Executor(registry), { checkpoints: sqlite, checkpointKey: KEY });
  const report = new Flow("report", { state: z.object({ report: z.string().default("") }) })
    .node("fetch", new Call("fetch_report", { args: () => ({}), into: "report" }))
    .end("fetch");
  const ticks = new Flow("ticks", { state: z.object({ n: z.number().int() }), maxVisits: STEPS + 1 })
    .node("tick", new Call("tick", { args: (s) => ({ n: s.n }), into: "n" }))
    .edge("tick", (s) => (s.n < STEPS ? "tick" : []), { targets: ["tick"] })
    .end("tick");
  await runner.run(report, {}, { runId: "big" });
  await runner.run(ticks, { n: 0 }, { runId: "long" });
  console_ = await startConsole({ store, checkpointKey: KEY, label: "big", port: 0, token: TOKEN });
}, 60_000);

afterAll(async () => {
  await console_?.close();
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the console on big runs", () => {
  it("cuts a big value in the page, says its size, and serves the whole at the link", async () => {
    const page = await (await get("/runs/big")).text();
    expect(page.length).toBeLessThan(60_000);
    expect(page).toContain("Cut at 4,000 characters of about 300.");
    const links = [...page.matchAll(/<a href="([^"]+)" download>/g)].map((m) => (m[1] ?? "").replaceAll("&#38;", "&"));
    const result = links.find((link) => link.endsWith("/result"));
    expect(result).toMatch(/^\/api\/runs\/big\/calls\/[^/]+\/result$/);
    const whole = await get(result ?? "");
    expect(whole.headers.get("content-disposition")).toMatch(/^attachment; filename="big-.+-result\.json"$/);
    expect(await whole.json()).toBe(big);
    const step = links.find((link) => /\/steps\/\d+$/.test(link)) ?? "";
    expect(((await (await get(step)).json()) as { state: { report: string } }).state.report).toBe(big);
    expect((await get("/api/runs/big/calls/nope/result")).status).toBe(404);
    expect((await get("/api/runs/big/steps/99")).status).toBe(404);
    expect((await get("/api/runs/big/elsewhere")).status).toBe(404);
  });

  it("answers a refresh from the latest checkpoint alone", async () => {
    const before = historyReads;
    const head = await get("/api/runs/big?head=1");
    expect(await head.json()).toEqual({ step: expect.any(Number), status: "done" });
    expect(historyReads).toBe(before);
    expect((await get("/api/runs/nobody?head=1")).status).toBe(404);
  });

  it("opens a long run on its newest 100 steps, with links to the older ones", async () => {
    const run = (await (await get("/api/runs/long")).json()) as RunDetail;
    expect(run.timeline).toEqual({ total: run.step + 1, first: run.step - 99, last: run.step });
    expect(run.steps.map((s) => s.step)).toEqual(Array.from({ length: 100 }, (_, i) => run.step - 99 + i));
    expect(run.calls).toHaveLength(STEPS);
    const page = await (await get("/runs/long")).text();
    expect(page.match(/<details class="step"/g)).toHaveLength(100);
    const older = /<a href="([^"]+)#timeline" rel="prev">Older steps<\/a>/.exec(page)?.[1]?.replaceAll("&#38;", "&");
    expect(older).toBe(`/runs/long?before=${run.step - 99}`);
    const second = (await (await get(`/api/runs/long?before=${run.step - 99}`)).json()) as RunDetail;
    expect(second.timeline).toEqual({ total: run.step + 1, first: run.step - 199, last: run.step - 100 });
    const oldest = (await (await get("/api/runs/long?before=30")).json()) as RunDetail;
    expect(oldest.steps.map((s) => s.step)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(oldest.steps[0]?.changes.length).toBeGreaterThan(0);
  });
});
