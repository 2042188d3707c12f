import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --quick` as CI runs it: every store that answers, with its peers, to the end; the figures are never asserted.
it("pnpm bench --quick runs every store and its peers, writes its JSON and exits by itself (nothing left open)", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-"));
  try {
    const args = ["--quick", "--budget-ms", "50", "--out", out];
    const { code, stdout, stderr } = await runScript(new URL("../src/main.ts", import.meta.url), args, 200_000);
    expect(stderr).not.toMatch(/Error/);
    expect(code).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +commits +round trips +runs\/s/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { results } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      results: Array<{ store: string; tickets: { commitsPerRun: number } }>;
    };
    expect(results.map((r) => [r.store, r.tickets.commitsPerRun])).toEqual([
      ["memory", 4],
      ["sqlite", 4],
      ["redis", 4],
      ["postgresql", 4],
    ]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 240_000);
