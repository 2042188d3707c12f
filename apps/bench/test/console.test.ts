import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --console --quick` to the end: the table and the JSON (the figures are never asserted).
it("pnpm bench --console --quick serves a big run's page and refresh, prints the table and writes its JSON", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-console-"));
  try {
    const { code, stdout, stderr } = await runScript(
      new URL("../src/main.ts", import.meta.url),
      ["--console", "--quick", "--out", out],
      120_000,
    );
    expect(code, `exit ${code}; stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^run +page ms +page MB +refresh ms +under 1 s$/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { cases } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      cases: Array<{ run: string; pageMs: number; refreshMs: number }>;
    };
    expect(cases.map((c) => c.run)).toEqual(["big-result", "long-run"]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 150_000);
