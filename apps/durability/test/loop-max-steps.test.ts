import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// With the SQLite store: the workers need a store that outlives them, and @durable/loop
// cannot depend on one (a store's own conformance run depends on loop, through the kit).
const CHILD = fileURLToPath(new URL("./loop-max-steps-child.ts", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs one worker process; `kill` arms a fault point in it. */
function worker(dir: string, maxSteps: number, kill?: string) {
  const env = { ...process.env, DURABLE_FAULT_POINT: kill ?? "" };
  const args = ["--import", "tsx", CHILD, join(dir, "runs.db"), join(dir, "effects"), "loop-1", String(maxSteps)];
  const result = spawnSync(process.execPath, args, { env, encoding: "utf8", timeout: 60_000 });
  return { signal: result.signal, stdout: result.stdout.trim(), stderr: result.stderr };
}

function modelCalls(dir: string): number {
  return readFileSync(join(dir, "effects"), "utf8").split("\n").filter(Boolean).length;
}

describe("the tool loop's maxSteps", () => {
  it.each([1, 2])(
    "bounds the model calls made, each worker SIGKILLed inside a model call (maxSteps %i)",
    (maxSteps) => {
      const dir = mkdtempSync(join(tmpdir(), "durable-max-steps-"));
      dirs.push(dir);
      // Every worker dies inside its first model call; the next one recovers the loop.
      const outcomes = [];
      for (let attempt = 0; attempt < maxSteps + 2; attempt++) {
        const out = worker(dir, maxSteps, "model.inside@1");
        outcomes.push(out);
        if (out.signal === null) break;
        expect(out.signal, out.stderr).toBe("SIGKILL");
      }
      const last = outcomes.at(-1)!;
      expect(last.signal, last.stderr).toBeNull();
      expect(JSON.parse(last.stdout)).toEqual({ status: "done", stopped: "max-steps" });
      expect(modelCalls(dir)).toBe(maxSteps);
      expect(outcomes.filter((o) => o.signal === "SIGKILL")).toHaveLength(maxSteps);
    },
  );
});
