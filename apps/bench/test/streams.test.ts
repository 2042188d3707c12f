import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runScript } from "@durable/test-utils/processes";

// `pnpm bench --streams` to the end on memory and SQLite with a short reply: the table and the JSON (the figures are
// never asserted, but what they count is).
it("pnpm bench --streams times a streamed reply with and without the durable stream per store, prints the table and writes its JSON", async () => {
  const out = mkdtempSync(join(tmpdir(), "durable-bench-streams-"));
  try {
    const { code, stdout, stderr } = await runScript(
      new URL("../src/main.ts", import.meta.url),
      ["--streams", "--tokens", "40", "--stores", "memory,sqlite", "--out", out],
      120_000,
    );
    expect(code, `exit ${code}; stderr: ${stderr.slice(-2000)}`).toBe(0);
    expect(stdout.join("\n")).toMatch(/^store +first token ms +token p50 µs/m);
    const [file, ...more] = readdirSync(out);
    expect(more).toEqual([]);
    const { figures } = JSON.parse(readFileSync(join(out, file ?? ""), "utf8")) as {
      figures: Array<{ store: string; tokens: number; streamBytesPer1000?: number; followLagMs?: { p50: number } }>;
    };
    expect(figures.map((f) => [f.store, f.tokens])).toEqual([
      ["memory", 40],
      ["sqlite", 40],
    ]);
    // Both keep the stream: its bytes are counted, and the follower saw every token.
    for (const f of figures) {
      expect(f.streamBytesPer1000).toBeGreaterThan(0);
      expect(f.followLagMs?.p50).toBeGreaterThanOrEqual(0);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 150_000);
