import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { printedLines } from "@durable/test-utils/processes";
import { afterEach, describe, expect, it } from "vitest";

const CHILD = fileURLToPath(new URL("./children-child.ts", import.meta.url));
const RUN = "report-1";

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts a worker process of children-child.ts, with the lines it prints. */
function worker(dir: string, mode: "start" | "serve") {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", CHILD, mode, join(dir, "runs.db"), join(dir, "effects"), RUN],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  return { child, line: printedLines(child).line };
}

async function killed(process_: ChildProcess): Promise<void> {
  process_.kill("SIGKILL");
  await new Promise((resolve) => process_.once("exit", resolve));
}

/** What the tools really did: the verdict comes from here, not from the store. */
function effects(dir: string): Array<{ tool: string; args: Record<string, unknown>; pid: number }> {
  return readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe("child runs across processes (SQLite)", () => {
  it("a parent with three children survives a SIGKILL of the parent's worker and then of a child's worker: each child runs once, the parent publishes once", {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-children-"));
    dirs.push(dir);
    const first = worker(dir, "start");
    // The parent waits for its children, and a child sleeps in the first worker: it dies with both.
    await first.line(`asleep ${RUN}`);
    await first.line(`asleep ${RUN}.`);
    const second = worker(dir, "serve");
    await second.line("serving");
    await killed(first.child);
    // A child asleep again in the second worker (its second sleep): it dies too, and a third goes on.
    await second.line(`asleep ${RUN}.`);
    await killed(second.child);
    const third = worker(dir, "serve");
    await third.line("done");

    const made = effects(dir);
    const sources = (tool: string) =>
      made
        .filter((e) => e.tool === tool)
        .map((e) => e.args["source"])
        .sort();
    expect(sources("fetch")).toEqual(["alpha", "beta", "gamma"]);
    expect(sources("summarize")).toEqual(["alpha", "beta", "gamma"]);
    const published = made.filter((e) => e.tool === "publish");
    expect(published).toHaveLength(1);
    expect(published[0]?.args).toEqual({
      words: "text of alpha".length + "text of beta".length + "text of gamma".length,
    });
    expect(published[0]?.pid).toBe(third.child.pid);
  });
});
