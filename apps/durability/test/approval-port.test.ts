import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// With the SQLite store: the workers need a store that outlives them.
const CHILD = fileURLToPath(new URL("./approval-port-child.ts", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs one worker process of `kind` whose approval port does `port`; `kill` arms a fault point in it. */
function worker(dir: string, kind: string, port: string, options: { kill?: string; decide?: string } = {}) {
  const env = { ...process.env, DURABLE_FAULT_POINT: options.kill ?? "" };
  const args = [join(dir, "runs.db"), join(dir, "effects"), kind, "refund-1", port, options.decide ?? ""];
  const result = spawnSync(process.execPath, ["--import", "tsx", CHILD, ...args], {
    env,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { signal: result.signal, stdout: result.stdout.trim(), stderr: result.stderr };
}

/** What the port and the tool really did, in order: the verdict comes from here, not from the store. */
function effects(dir: string): string[] {
  const file = join(dir, "effects");
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The checkpoint a loop saves once its tool round is over: after step 0 and the model's reply. A flow's is its first after step 0. */
const ROUND_SAVE = { flow: "checkpoint.before-save@2", loop: "checkpoint.before-save@3" };

describe.each(["flow", "loop"] as const)("a %s whose approval port is awaited in process (SQLite)", (kind) => {
  it('a worker SIGKILLed while the port waits leaves the call in doubt; a "rerun" decision asks the port again, and its denial holds: the refund never runs', {
    timeout: 60_000,
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-port-"));
    dirs.push(dir);
    const waiting = worker(dir, kind, "kill");
    expect(waiting.signal, waiting.stderr).toBe("SIGKILL");
    expect(effects(dir)).toEqual(["asked"]);

    const decided = worker(dir, kind, "deny", { decide: "rerun" });
    expect(decided.signal, decided.stderr).toBeNull();
    expect(JSON.parse(decided.stdout)).toEqual({ outcome: "denied: over the limit", inDoubt: ["refund"] });
    expect(effects(dir)).toEqual(["asked", "asked"]);
  });

  it("a denial is recorded: a worker SIGKILLed after the port denied, before the round's checkpoint, is recovered with the denial, never in doubt, the port not asked again", {
    timeout: 60_000,
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-port-"));
    dirs.push(dir);
    const denied = worker(dir, kind, "deny", { kill: ROUND_SAVE[kind] });
    expect(denied.signal, denied.stderr).toBe("SIGKILL");
    expect(effects(dir)).toEqual(["asked"]);

    const recovered = worker(dir, kind, "approve");
    expect(recovered.signal, recovered.stderr).toBeNull();
    expect(JSON.parse(recovered.stdout)).toEqual({ outcome: "denied: over the limit", inDoubt: [] });
    expect(effects(dir)).toEqual(["asked"]);
  });
});
