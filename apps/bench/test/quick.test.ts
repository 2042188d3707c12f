import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --quick` as CI runs it, to the end; the figures are never asserted. PostgreSQL and its peers are left
// out here (the peers' own test runs them once each): beside every other test, their sweeps took minutes.
it("pnpm bench --quick runs the stores and their peers, writes its JSON and exits by itself (nothing left open)", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-"));
  try {
    const args = ["--quick", "--budget-ms", "20", "--stores", "memory,sqlite,redis", "--out", out];
    const { code, stdout, stderr } = await runScript(new URL("../src/main.ts", import.meta.url), args, 240_000);
    expect(stderr).not.toMatch(/Error/);
    expect(code, `exit ${code} (killed at 240 s if still running); stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +commits +round trips +runs\/s/m);
    expect(stdout.join("\n")).toMatch(
      /^store +OTel off µs per run +OTel SDK on µs per run +SDK adds µs +no SDK: its calls µs +spans per run/m,
    );
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { results } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      results: Array<{ store: string; tickets: { commitsPerRun: number; telemetry: { spansPerRun: number } } }>;
    };
    expect(results.map((r) => [r.store, r.tickets.commitsPerRun, r.tickets.telemetry.spansPerRun])).toEqual([
      ["memory", 4, 8],
      ["sqlite", 4, 8],
      ["redis", 4, 8],
    ]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 300_000);
