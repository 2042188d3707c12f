import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// With the SQLite store: the workers need a store that outlives them.
const CHILD = fileURLToPath(new URL("./flow-retry-backoff-child.ts", import.meta.url));
const DELAY_MS = 2_000;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs one worker process; `kill` arms a fault point in it. */
function worker(dir: string, kill?: string) {
  const env = { ...process.env, DURABLE_FAULT_POINT: kill ?? "" };
  const args = ["--import", "tsx", CHILD, join(dir, "runs.db"), join(dir, "effects"), "order-1", String(DELAY_MS)];
  const result = spawnSync(process.execPath, args, { env, encoding: "utf8", timeout: 60_000 });
  return { signal: result.signal, stdout: result.stdout.trim(), stderr: result.stderr };
}

/** What the tool really did, one entry per attempt: the verdict comes from here, not from the store. */
function attempts(dir: string): Array<{ attempt: number; key: string; at: number }> {
  return readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe("a tool's retries across processes (SQLite)", () => {
  it("retries a transient failure to success in one worker, after the backoff", { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-retry-"));
    dirs.push(dir);
    const out = worker(dir);
    expect(out.signal, out.stderr).toBeNull();
    expect(JSON.parse(out.stdout)).toMatchObject({ status: "done", state: { note: "charged" } });
    const [first, second] = attempts(dir);
    expect([first?.attempt, second?.attempt]).toEqual([1, 2]);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(DELAY_MS);
  });

  it("a worker SIGKILLed during the backoff: the next one goes on with attempt 2 at the recorded time, the same idempotency key, no decision asked", {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-retry-"));
    dirs.push(dir);
    const killed = worker(dir, "call.after-failed@1");
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    // Part of the wait passes before another worker comes: it waits what is left, not the whole backoff again.
    await new Promise((resolve) => setTimeout(resolve, DELAY_MS / 2));
    const recovering = worker(dir);
    expect(recovering.signal, recovering.stderr).toBeNull();
    const { began, ...result } = JSON.parse(recovering.stdout);
    expect(result).toEqual({ status: "done", state: { note: "charged" } });
    const made = attempts(dir);
    expect(made.map((a) => a.attempt)).toEqual([1, 2]);
    expect(made[1]!.key).toBe(made[0]!.key);
    // The schedule went on: attempt 2 waited for the time attempt 1 recorded, not a whole backoff after the
    // recovery began (timed inside the process: a busy machine may take seconds to start one).
    expect(made[1]!.at - made[0]!.at).toBeGreaterThanOrEqual(DELAY_MS);
    expect(made[1]!.at - began).toBeLessThan(DELAY_MS);
  });
});
