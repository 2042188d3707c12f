import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --sleepers --quick` to the end on memory and SQLite: the table and the JSON (the figures are never asserted).
it("pnpm bench --sleepers --quick times a poll among sleeping runs and the wake-up lag per store, prints the table and writes its JSON", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-sleepers-"));
  try {
    const { code, stdout, stderr } = await runScript(
      new URL("../src/main.ts", import.meta.url),
      ["--sleepers", "--quick", "--asleep", "200", "--due", "50", "--stores", "memory,sqlite", "--out", out],
      120_000,
    );
    expect(code, `exit ${code}; stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +asleep +poll ms \(none\) +poll ms \(asleep\)/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { figures } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      figures: Array<{ store: string; sleepers: number; due: number }>;
    };
    expect(figures.map((f) => [f.store, f.sleepers, f.due])).toEqual([
      ["memory", 200, 50],
      ["sqlite", 200, 50],
    ]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 150_000);
