import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { printedLines } from "@durable/test-utils/processes";
import { storesOfThisFile } from "./conformance.js";

const open = storesOfThisFile();

const RUNS = 40;

/** A racer process (queue-racer.ts) on the file, its lines, and how it ended. */
function racer(path: string, name: string) {
  const script = fileURLToPath(new URL("./queue-racer.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, path, "q", "f", name], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, printed: printedLines(child), exit, stderr: () => stderr };
}

/**
 * The most records holding at once: each record's `[from, to]` lies inside the time the store held its run, so
 * records that overlap (by ms read with Date.now, so only a strict overlap counts) are runs the store held at once.
 */
function mostAtOnce(records: ReadonlyArray<{ from: number; to: number }>): number {
  // At one ms, ends come before starts.
  const events = records.flatMap(({ from, to }) => [
    [from, 1],
    [to, -1],
  ]);
  events.sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
  let holding = 0;
  let most = 0;
  for (const [, change] of events) {
    holding += change as number;
    most = Math.max(most, holding);
  }
  return most;
}

describe("a queue across processes", () => {
  it(`two processes of 4 workers each racing takes of ${RUNS} runs on one file never hold more than its concurrency (2), by their own records`, async () => {
    const store = open();
    const place = { queue: "q", priority: 0, concurrency: 2 };
    await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        store.save(`run-${i}`, 0, {
          status: "running",
          segment: 0,
          name: "f",
          kind: "flow",
          sealed: "d0",
          queue: place,
        }),
      ),
    );
    const racers = [racer(store.path, "p1"), racer(store.path, "p2")];
    await Promise.all(racers.map((r) => r.printed.line("ready")));
    for (const r of racers) r.child.stdin?.write("go\n");
    const codes = await Promise.all(racers.map((r) => r.exit));
    expect(codes, racers.map((r) => r.stderr()).join("\n")).toEqual([0, 0]);

    const took = racers.map((r) =>
      r.printed.lines
        .filter((line) => line.startsWith("took "))
        .map((line) => JSON.parse(line.slice(5)) as { runId: string; from: number; to: number }),
    );
    const refused = racers.map((r) => Number(r.printed.lines.find((l) => l.startsWith("refused "))?.slice(8)));
    const all = took.flat();
    // Both processes took runs, and the queue refused takes: the limit was raced for, not merely never reached.
    expect(took.map((records) => records.length > 0)).toEqual([true, true]);
    expect((refused[0] ?? 0) + (refused[1] ?? 0)).toBeGreaterThan(0);
    expect(all.map((record) => record.runId).sort()).toEqual(Array.from({ length: RUNS }, (_, i) => `run-${i}`).sort());
    expect(mostAtOnce(all)).toBeLessThanOrEqual(2);
    for await (const _ of store.listUnfinished("f")) expect.unreachable("every run ended");
  }, 90_000);
});
