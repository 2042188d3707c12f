import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { printedLines } from "@durable/test-utils/processes";
import { sleep, until } from "@durable/test-utils/waiting";
import { afterEach, describe, expect, it } from "vitest";

const CHILD = fileURLToPath(new URL("./schedule-child.ts", import.meta.url));
const EVERY_MS = 200;
const TICKS = 30;
const POLL_MS = 100;
const LEASE_MS = 1_000;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Effect {
  readonly tick: string;
  readonly pid: number;
  readonly at: number;
}

/** Starts a worker process of the schedule; resolves once it polls, with the time it printed. */
async function worker(dir: string): Promise<{ child: ChildProcess; serving: number }> {
  const args = [join(dir, "runs.db"), join(dir, "effects"), String(EVERY_MS), String(POLL_MS), String(LEASE_MS)];
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const serving = Number((await printedLines(child).line("serving ")).slice("serving ".length));
  return { child, serving };
}

/** What the tools really did: the verdict comes from here, not from the store. */
function effects(dir: string): Effect[] {
  const file = join(dir, "effects");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/**
 * Three worker processes of one schedule on a new SQLite file, and the `TICKS` ticks the test judges: from two ticks
 * after the last of them began to poll (a busy machine may take seconds to start a process). Each tick is a whole
 * multiple of `EVERY_MS` since the epoch on every worker.
 */
async function fleet(): Promise<{ dir: string; workers: Array<{ child: ChildProcess }>; ticks: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "durable-schedule-"));
  dirs.push(dir);
  // The file and its tables first, so three processes do not make them at once.
  await new SQLiteCheckpointStore(join(dir, "runs.db")).close();
  const workers = await Promise.all([worker(dir), worker(dir), worker(dir)]);
  const first = (Math.floor(Math.max(...workers.map((w) => w.serving)) / EVERY_MS) + 2) * EVERY_MS;
  const ticks = Array.from({ length: TICKS }, (_, k) => new Date(first + k * EVERY_MS).toISOString());
  return { dir, workers, ticks };
}

/** Waits until every judged tick's tool ran, then a lease and a few ticks more, for any that ran twice to show. */
async function settled(dir: string, ticks: string[]): Promise<Effect[]> {
  const last = Date.parse(ticks.at(-1) as string);
  await sleep(Math.max(0, last - Date.now()));
  await until(
    () => {
      const seen = new Set(effects(dir).map((e) => e.tick));
      return ticks.every((tick) => seen.has(tick));
    },
    15_000,
    50,
  );
  await sleep(LEASE_MS + 3 * EVERY_MS);
  return effects(dir);
}

/** The effects of each tick, by tick. */
function byTick(made: Effect[]): Map<string, Effect[]> {
  const map = new Map<string, Effect[]>();
  for (const effect of made) map.set(effect.tick, [...(map.get(effect.tick) ?? []), effect]);
  return map;
}

describe("a schedule served by three worker processes (SQLite)", () => {
  it(`starts exactly ${TICKS} runs for ${TICKS} ticks: each tick's run once, no tick missed`, {
    timeout: 60_000,
  }, async () => {
    const { dir, workers, ticks } = await fleet();
    const made = await settled(dir, ticks);
    const each = byTick(made);
    // Every judged tick's tool ran exactly once, and so did every other tick's (before and after the judged ones).
    expect(ticks.map((tick) => each.get(tick)?.length ?? 0)).toEqual(ticks.map(() => 1));
    expect([...each.values()].filter((list) => list.length > 1)).toEqual([]);
    // Every tick is a whole multiple of the interval, on every worker.
    expect(made.every((e) => Date.parse(e.tick) % EVERY_MS === 0)).toBe(true);
    // A fleet: more than one worker started the judged ticks' runs, and only the three did.
    const pids = new Set(ticks.map((tick) => each.get(tick)?.[0]?.pid));
    expect(pids.size).toBeGreaterThan(1);
    expect([...pids].every((pid) => workers.some((w) => w.child.pid === pid))).toBe(true);
  });

  it(`one worker SIGKILLed midway: the other two carry on, still ${TICKS} runs, none twice`, {
    timeout: 60_000,
  }, async () => {
    const { dir, workers, ticks } = await fleet();
    const [killed] = workers as [{ child: ChildProcess }];
    // A moment after a tick in the middle, when the killed worker may be inside that tick's run.
    await sleep(Math.max(0, Date.parse(ticks[TICKS / 2 - 1] as string) + 5 - Date.now()));
    killed.child.kill("SIGKILL");
    const killedAt = Date.now();
    await new Promise((resolve) => killed.child.once("exit", resolve));
    const made = await settled(dir, ticks);
    const each = byTick(made);
    for (const tick of ticks) {
      const list = each.get(tick) ?? [];
      // Once; or, when the killed worker ran the tool and died before it could record so, once more by the worker
      // that recovered the run (its call was in doubt, and the tool is idempotent): one run, never two.
      if (list.length === 2) {
        expect(list[0]?.pid).toBe(killed.child.pid);
        expect(list[0]?.at).toBeLessThanOrEqual(killedAt);
        expect(list[1]?.pid).not.toBe(killed.child.pid);
      } else expect(list, tick).toHaveLength(1);
    }
    // Nothing ran in the killed worker after its death; the ticks after it were started by the other two.
    expect(made.filter((e) => e.pid === killed.child.pid && e.at > killedAt)).toEqual([]);
    const after = ticks.filter((tick) => Date.parse(tick) > killedAt + EVERY_MS);
    expect(after.length).toBeGreaterThan(TICKS / 3);
    for (const tick of after) expect(each.get(tick)?.[0]?.pid).not.toBe(killed.child.pid);
  });
});
