import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const CHILD = fileURLToPath(new URL("./loop-long-kill-child.ts", import.meta.url));
const STEPS = 300;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs one worker process to its end or to its armed fault point. */
function worker(dir: string, kill: string) {
  const env = { ...process.env, DURABLE_FAULT_POINT: kill };
  const args = ["--import", "tsx", CHILD, join(dir, "runs.db"), join(dir, "effects"), "long-1", String(STEPS)];
  const result = spawnSync(process.execPath, args, { env, encoding: "utf8", timeout: 120_000 });
  return { signal: result.signal, stdout: result.stdout.trim(), stderr: result.stderr };
}

/** Where a worker dies: inside a tool (its call then in doubt), after a call's record, or around a checkpoint, at its n-th time. */
const kill = fc.record({
  point: fc.constantFrom(
    "tool.inside",
    "call.after-started",
    "call.after-done",
    "checkpoint.after-save",
    "model.before-call",
  ),
  // Each step makes one tool call and saves twice: a worker reaches every point about STEPS times at most.
  hit: fc.integer({ min: 1, max: STEPS }),
});

/** The run's checkpoints as stored: how many are changes, and their bytes a step. */
async function stored(db: string): Promise<{ changes: number; rows: number; bytesPerStep: number }> {
  const store = new SQLiteCheckpointStore(db);
  try {
    const rows = await store.history("long-1");
    const bytes = rows.reduce((sum, row) => sum + row.sealed.length, 0);
    return {
      changes: rows.filter((row) => row.sealed.includes('"delta":')).length,
      rows: rows.length,
      bytesPerStep: bytes / STEPS,
    };
  } finally {
    await store.close();
  }
}

describe("a 300-step tool loop whose workers are SIGKILLed at random steps", () => {
  it("finishes with every page fetched once (the effects file), its checkpoints each step's change", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(kill, { minLength: 3, maxLength: 3 }), async (kills) => {
        const dir = mkdtempSync(join(tmpdir(), "durable-long-kill-"));
        dirs.push(dir);
        const killed: string[] = [];
        let last: ReturnType<typeof worker> | undefined;
        for (const { point, hit } of [...kills, { point: undefined, hit: 0 }]) {
          last = worker(dir, point === undefined ? "" : `${point}@${hit}`);
          if (last.signal === null) break;
          expect(last.signal, last.stderr).toBe("SIGKILL");
          killed.push(`${point}@${hit}`);
        }
        const where = `killed at ${killed.join(", ")}`;
        expect(last?.signal, last?.stderr).toBeNull();
        expect(JSON.parse(last?.stdout ?? "{}"), last?.stderr).toEqual({ status: "done", messages: 2 * STEPS + 2 });
        // The verdict comes from what the tool did, not from the store: each of the 300 pages fetched once.
        const fetched = readFileSync(join(dir, "effects"), "utf8").split("\n").filter(Boolean);
        expect(new Set(fetched).size, where).toBe(STEPS);
        expect(fetched, where).toHaveLength(STEPS);
        expect(killed.length, "no kill landed").toBeGreaterThan(0);
        // Recoveries went on with the chain: the rows after the first snapshots are changes, a few KB a step.
        const { changes, rows, bytesPerStep } = await stored(join(dir, "runs.db"));
        expect(changes, where).toBeGreaterThan(0.95 * rows);
        expect(bytesPerStep, where).toBeLessThan(4_000);
      }),
      { numRuns: 4 },
    );
  }, 600_000);
});
