import { appendFileSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { EventLog } from "../src/event-log.js";
import { startConsole } from "../src/index.js";
import { KEY, seed } from "./fixture.js";

const dir = mkdtempSync(join(tmpdir(), "durable-console-event-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const newFile = () => join(dir, `events-${files++}.jsonl`);
const line = (runId: string, step: number) =>
  `${JSON.stringify({ type: "checkpoint.saved", runId, kind: "flow", step, at: `2026-12-05T10:00:0${step}.000Z` })}\n`;
const steps = (log: EventLog, runId: string) => log.of(runId).map((event) => (event as { step: number }).step);

describe("the console's event log", () => {
  it("gives each run its events in order, and skips and counts the lines that are not events", () => {
    const path = newFile();
    writeFileSync(
      path,
      [
        line("a", 0),
        "not json\n",
        line("b", 0),
        "null\n",
        "[1]\n",
        '{"type":"run.done","at":"2026-12-05T10:00:00.000Z"}\n',
        "\n",
        line("a", 1),
      ].join(""),
    );
    const log = new EventLog(path);
    expect(steps(log, "a")).toEqual([0, 1]);
    expect(steps(log, "b")).toEqual([0]);
    expect(log.of("none")).toEqual([]);
    expect(log.skippedLines()).toBe(4);
  });

  it("reads what was appended since its last look, and a last line once it is whole", () => {
    const path = newFile();
    const log = new EventLog(path);
    expect(log.of("a")).toEqual([]);
    writeFileSync(path, line("a", 0));
    expect(steps(log, "a")).toEqual([0]);
    const next = line("a", 1);
    // A write under way: half a line, no newline yet.
    appendFileSync(path, next.slice(0, 20));
    expect(steps(log, "a")).toEqual([0]);
    appendFileSync(path, next.slice(20) + line("a", 2));
    expect(steps(log, "a")).toEqual([0, 1, 2]);
    expect(log.skippedLines()).toBe(0);
  });

  it("reads a file put in the log's place, or cut short, from its start", () => {
    const path = newFile();
    writeFileSync(path, line("a", 0) + line("a", 1));
    const log = new EventLog(path);
    expect(steps(log, "a")).toEqual([0, 1]);
    const other = newFile();
    writeFileSync(other, line("a", 5));
    renameSync(other, path);
    expect(steps(log, "a")).toEqual([5]);
    truncateSync(path, 0);
    appendFileSync(path, line("b", 3));
    expect(log.of("a")).toEqual([]);
    expect(steps(log, "b")).toEqual([3]);
  });

  it("lines that are not events leave a run's page whole, and the page says how many were skipped", async () => {
    const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
    const events = newFile();
    const runs = await seed(store, events);
    appendFileSync(events, 'null\n{"broken\n');
    const console_ = await startConsole({ store, checkpointKey: KEY, label: "sqlite", port: 0, events });
    try {
      const page = await fetch(`${console_.api}/runs/${encodeURIComponent(runs.done)}`, {
        headers: { authorization: `Bearer ${console_.token}` },
      });
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain("From the event log (2 of its lines are not events: skipped)");
      expect(html).toContain('data-step="1"');
    } finally {
      await console_.close();
      await store.close();
    }
  });
});
