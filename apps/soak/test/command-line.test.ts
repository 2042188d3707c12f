import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { describeBin } from "@durable-apps/shared/bin-checks";

const MAIN = new URL("../src/main.ts", import.meta.url);

describeBin("soak", MAIN, [
  "--store <url>",
  "--runs <n>",
  "--workers <n>",
  "--lease <ms>",
  "--seconds <n>",
  "--faults",
  "--cluster",
  "--queue",
  "--versions",
  "--freeze <s>",
]);

/** Runs `pnpm soak` with `args`: its exit code and what it wrote to stderr. */
function soak(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["--import", "tsx", fileURLToPath(MAIN), ...args], { timeout: 60_000 });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

describe("pnpm soak --versions on the command line", () => {
  it("with another soak, or fewer than 2 workers: one line on stderr that says why, exit 2", async () => {
    const refused = await Promise.all([
      soak("--versions", "--faults"),
      soak("--versions", "--cluster"),
      soak("--versions", "--queue"),
      soak("--versions", "--workers", "1"),
    ]);
    const reasons = [
      /takes no --store, --queue or --versions/,
      /--faults, --queue or --versions/,
      /two soaks/,
      /--workers 2/,
    ];
    for (const [i, { code, stderr }] of refused.entries()) {
      expect(code).toBe(2);
      expect(stderr).toMatch(new RegExp(`^[^\\n]*${(reasons[i] as RegExp).source}[^\\n]*\\n$`));
    }
  }, 60_000);
});
