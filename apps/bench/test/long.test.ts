import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --long --quick` to the end on memory and SQLite: the table and the JSON (the figures are never asserted).
it("pnpm bench --long --quick runs a long tool loop per store, prints the table and writes its JSON", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-long-"));
  try {
    const { code, stdout, stderr } = await runScript(
      new URL("../src/main.ts", import.meta.url),
      ["--long", "--quick", "--stores", "memory,sqlite", "--out", out],
      120_000,
    );
    expect(code, `exit ${code}; stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +steps +early ms +late ms +late÷early/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { figures } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      figures: Array<{ store: string; steps: number; bytesPerStep: number }>;
    };
    expect(figures.map((f) => [f.store, f.steps])).toEqual([
      ["memory", 60],
      ["sqlite", 60],
    ]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 150_000);
