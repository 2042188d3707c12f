import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --sleepers --quick` to the end on memory and SQLite: the table and the JSON (the figures are never asserted).
it("pnpm bench --sleepers --quick times a poll among sleeping runs, the wake-up lag and a sendEvent per store, prints the tables and writes their JSON", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-sleepers-"));
  try {
    const { code, stdout, stderr } = await runScript(
      new URL("../src/main.ts", import.meta.url),
      ["--sleepers", "--quick", "--asleep", "200", "--due", "50", "--stores", "memory,sqlite", "--out", out],
      120_000,
    );
    expect(code, `exit ${code}; stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +asleep +poll ms \(none\) +poll ms \(asleep\)/m);
    expect(stdout.join("\n")).toMatch(/^store +sends +calls\/send +trips\/send/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { figures, events } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      figures: Array<{ store: string; sleepers: number; due: number }>;
      events: Array<{ store: string; sends: number; callsPerSend: number }>;
    };
    // Reading where the inbox ends, then the append.
    expect(events.map((f) => [f.store, f.sends, f.callsPerSend])).toEqual([
      ["memory", 20, 2],
      ["sqlite", 20, 2],
    ]);
    expect(figures.map((f) => [f.store, f.sleepers, f.due])).toEqual([
      ["memory", 200, 50],
      ["sqlite", 200, 50],
    ]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 150_000);
