import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { printedLines } from "@durable/test-utils/processes";

const CHILD = fileURLToPath(new URL("./sleep-child.ts", import.meta.url));
const SLEEP_MS = 2_000;
const POLL_MS = 200;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts a worker process, with the lines it prints. */
function worker(mode: "start" | "serve", dir: string) {
  const args = [join(dir, "runs.db"), join(dir, "effects"), "nap-1", String(SLEEP_MS), String(POLL_MS)];
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, mode, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return { child, line: printedLines(child).line };
}

/** What the tools really did, in order: the verdict comes from here, not from the store. */
function effects(dir: string): Array<{ tool: string; pid: number; at: number }> {
  return readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe("a durable sleep across worker processes (SQLite)", () => {
  it("the worker that put the run to sleep is SIGKILLed during it: another wakes it no earlier than its wake time and no later than a poll and a second after, each tool run once", {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-sleep-"));
    dirs.push(dir);
    const first = worker("start", dir);
    const { until } = JSON.parse((await first.line("asleep ")).slice("asleep ".length)) as { until: number };
    await first.line("serving");
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    expect(Date.now()).toBeLessThan(until);
    const second = worker("serve", dir);
    const serving = Number((await second.line("serving ")).slice("serving ".length));
    await second.line("done");
    const made = effects(dir);
    expect(made.map((e) => e.tool)).toEqual(["send", "remind"]);
    const [send, remind] = made as [(typeof made)[0], (typeof made)[0]];
    expect(send.pid).toBe(first.child.pid);
    expect(remind.pid).toBe(second.child.pid);
    expect(remind.at).toBeGreaterThanOrEqual(until);
    // Within a poll and a second of the wake time, or of when the second worker began to poll if it came later.
    expect(remind.at - Math.max(until, serving)).toBeLessThanOrEqual(POLL_MS + 1_000);
  });
});
