import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { jsonlEventSink, readJsonlEvents } from "../src/index.js";
import { emit } from "../src/runner.js";

const dir = mkdtempSync(join(tmpdir(), "durable-events-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("jsonlEventSink", () => {
  it("appends one line per event, read back in order with their times", async () => {
    const path = join(dir, "a.jsonl");
    const sink = jsonlEventSink(path, { fsync: true });
    await emit(sink, {
      type: "checkpoint.saved",
      runId: "r",
      kind: "flow",
      step: 0,
      status: "running",
      name: "f",
      unreplayed: [],
    });
    await emit(sink, {
      type: "run.recovered",
      owner: "w1",
      runId: "r",
      kind: "flow",
      step: 2,
      replayed: [{ callId: "1:a:0", tool: "a" }],
      rerun: [],
      decided: [],
    });
    const events = readJsonlEvents(path);
    expect(events.map((e) => e.type)).toEqual(["checkpoint.saved", "run.recovered"]);
    expect(Date.parse(events[0]!.at)).not.toBeNaN();
  });

  it("skips a torn last line left by a crash mid-write, and reads nothing from a missing file", async () => {
    const path = join(dir, "b.jsonl");
    await emit(jsonlEventSink(path), { type: "run.done", runId: "r", kind: "loop", step: 3 });
    appendFileSync(path, '{"type":"run.fai');
    expect(readJsonlEvents(path).map((e) => e.type)).toEqual(["run.done"]);
    expect(readJsonlEvents(join(dir, "missing.jsonl"))).toEqual([]);
  });

  it("skips every line that holds no event (JSON of another shape included), so one bad line hides no run", async () => {
    const path = join(dir, "c.jsonl");
    appendFileSync(path, 'null\n[1]\n"text"\n{"type":"run.done","at":"2026-12-05T10:00:00.000Z"}\n');
    await emit(jsonlEventSink(path), { type: "run.done", runId: "r", kind: "loop", step: 3 });
    expect(readJsonlEvents(path).map((e) => e.runId)).toEqual(["r"]);
  });
});
