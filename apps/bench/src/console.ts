import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor, jsonlEventSink, ToolRegistry } from "@durable/core";
import { startConsole } from "@durable/console";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

/** What the console bench was asked: the events file's size and the big result's. */
export interface ConsoleSizes {
  readonly eventsMb: number;
  readonly resultMib: number;
  readonly steps: number;
}

export const CONSOLE_FULL: ConsoleSizes = { eventsMb: 500, resultMib: 20, steps: 1_000 };
export const CONSOLE_QUICK: ConsoleSizes = { eventsMb: 20, resultMib: 2, steps: 100 };

/** One case: a run's page and its refresh, served by a console over the same store and events file. */
interface ConsoleCase {
  readonly run: string;
  /** The whole run page, ms, median of the reads after the first. */
  readonly pageMs: number;
  readonly pageBytes: number;
  /** What the page's script asks every few seconds (`?head`), ms, median. */
  readonly refreshMs: number;
}

export interface ConsoleFigures {
  readonly sizes: ConsoleSizes;
  readonly eventsBytes: number;
  /** From `startConsole` until it serves: it reads the events file once. */
  readonly startMs: number;
  /** What the console holds after reading the events file (its index by run), MB of heap. */
  readonly heapMb: number;
  readonly cases: readonly ConsoleCase[];
}

/** What a run's page and its refresh should take at most on the 2-core machine. */
const TARGET_MS = 1_000;
const KEY = "console-bench-key-0123456789abcdef0123456789";
const TURNS = 5;

/**
 * The console on big runs, on SQLite: a run whose one call returns a
 * `resultMib` MiB value, a run of `steps` supersteps (a call each), and an
 * events file of `eventsMb` MB (the runs' own events among those of other
 * runs). Serves each run's page and its refresh a few times and keeps the
 * medians.
 */
export async function measureConsole(sizes: ConsoleSizes, say: (line: string) => void): Promise<ConsoleFigures> {
  const dir = mkdtempSync(join(tmpdir(), "durable-bench-console-"));
  const events = join(dir, "events.jsonl");
  const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
  try {
    fillEvents(events, sizes.eventsMb / 2, "before");
    const big = "x".repeat(sizes.resultMib * 2 ** 20);
    const registry = new ToolRegistry()
      .tool("fetch_report", () => big)
      .tool("tick", (a: { n: number }) => a.n + 1, { idempotent: true });
    const runner = new FlowRunner(new Executor(registry), {
      checkpoints: store,
      checkpointKey: KEY,
      events: jsonlEventSink(events),
    });
    const report = new Flow("report", { state: z.object({ report: z.string().default("") }) })
      .node("fetch", new Call("fetch_report", { args: () => ({}), into: "report" }))
      .end("fetch");
    const ticks = new Flow("ticks", { state: z.object({ n: z.number().int() }), maxVisits: sizes.steps + 1 })
      .node("tick", new Call("tick", { args: (s) => ({ n: s.n }), into: "n" }))
      .edge("tick", (s) => (s.n < sizes.steps ? "tick" : []), { targets: ["tick"] })
      .end("tick");
    let t = performance.now();
    await runner.run(report, {}, { runId: "big-result" });
    say(`console bench: a run with a ${sizes.resultMib} MiB result in ${ms(t)} ms`);
    t = performance.now();
    await runner.run(ticks, { n: 0 }, { runId: "long-run" });
    say(`console bench: a run of ${sizes.steps} steps in ${ms(t)} ms`);
    fillEvents(events, sizes.eventsMb / 2, "after");
    const eventsBytes = statSync(events).size;

    const heapBefore = heapUsed();
    t = performance.now();
    const running = await startConsole({ store, checkpointKey: KEY, label: "bench", port: 0, events });
    const startMs = ms(t);
    const heapMb = Math.round((heapUsed() - heapBefore) / 1e6);
    say(
      `console bench: started over a ${(eventsBytes / 1e6).toFixed(0)} MB events file in ${startMs} ms, holding ${heapMb} MB more heap`,
    );
    try {
      const cases: ConsoleCase[] = [];
      for (const run of ["big-result", "long-run"]) {
        const get = (path: string) => timed(`${running.api}${path}`, running.token);
        const pages = [];
        const refreshes = [];
        for (let i = 0; i < TURNS; i++) {
          pages.push(await get(`/runs/${run}`));
          refreshes.push(await get(`/api/runs/${run}?head=1`));
        }
        const figures = {
          run,
          pageMs: median(pages.slice(1).map((p) => p.ms)),
          pageBytes: pages[0]?.bytes ?? 0,
          refreshMs: median(refreshes.slice(1).map((p) => p.ms)),
        };
        say(
          `console bench: ${run}: page ${figures.pageMs} ms (${(figures.pageBytes / 1e6).toFixed(2)} MB), refresh ${figures.refreshMs} ms`,
        );
        cases.push(figures);
      }
      return { sizes, eventsBytes, startMs, heapMb, cases };
    } finally {
      await running.close();
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Appends `mb` MB of events of other runs, as a busy fleet's log holds them. */
function fillEvents(path: string, mb: number, tag: string): void {
  const line = (i: number) =>
    `${JSON.stringify({
      type: "call.done",
      at: new Date(1_760_000_000_000 + i).toISOString(),
      runId: `other-${tag}-${i % 10_000}`,
      kind: "flow",
      call: { callId: `c-${i}`, tool: "hold_seats", round: 1 },
      durationMs: 3,
      replayed: false,
      note: "x".repeat(300),
    })}\n`;
  const chunk: string[] = [];
  let written = 0;
  let i = 0;
  writeFileSync(path, "", { flag: "a" });
  while (written < mb * 1e6) {
    chunk.length = 0;
    let size = 0;
    while (size < Math.min(8e6, mb * 1e6 - written)) {
      const text = line(i++);
      chunk.push(text);
      size += text.length;
    }
    appendFileSync(path, chunk.join(""));
    written += size;
  }
}

async function timed(url: string, token: string): Promise<{ ms: number; bytes: number }> {
  const t = performance.now();
  const reply = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const body = await reply.arrayBuffer();
  if (!reply.ok) throw new Error(`${url}: HTTP ${reply.status}: ${Buffer.from(body).toString("utf8").slice(0, 500)}`);
  return { ms: ms(t), bytes: body.byteLength };
}

/** The heap in use after a full collection (the bench runs with --expose-gc; without it, as it is). */
function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

const ms = (since: number) => Math.round(performance.now() - since);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** The figures as a table, each against the second a page and a refresh should take at most. */
export function consoleTable(figures: ConsoleFigures): string[] {
  const within = (ms: number) => (ms < TARGET_MS ? "yes" : "NO");
  return [
    `console over a ${(figures.eventsBytes / 1e6).toFixed(0)} MB events file (started in ${figures.startMs} ms, ${figures.heapMb} MB of heap for its index)`,
    "run            page ms  page MB  refresh ms  under 1 s",
    ...figures.cases.map(
      (c) =>
        `${c.run.padEnd(14)} ${String(c.pageMs).padStart(7)}  ${(c.pageBytes / 1e6).toFixed(2).padStart(7)}  ${String(c.refreshMs).padStart(10)}  ${within(Math.max(c.pageMs, c.refreshMs))}`,
    ),
  ];
}
