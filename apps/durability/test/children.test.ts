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

/** Starts a worker process of children-child.ts serving the parent flow or the child workflow, with the lines it prints. */
function worker(dir: string, mode: "start" | "serve", serves: "report" | "research") {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", CHILD, mode, join(dir, "runs.db"), join(dir, "effects"), RUN, serves],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  return { child, ...printedLines(child) };
}

/** Waits until the process printed `count` lines starting with `prefix`, each another. */
async function printedTimes(process_: { readonly lines: readonly string[] }, prefix: string, count: number) {
  for (let waited = 0; new Set(process_.lines.filter((l) => l.startsWith(prefix))).size < count; waited += 50) {
    if (waited > 60_000)
      throw new Error(`fewer than ${count} lines starting with ${JSON.stringify(prefix)} in a minute`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGKILLs a process and waits for its end (at once when it ended already: a worker ends once the run is done). */
async function killed(process_: ChildProcess): Promise<void> {
  if (process_.exitCode !== null || process_.signalCode !== null) return;
  const exited = new Promise((resolve) => process_.once("exit", resolve));
  process_.kill("SIGKILL");
  await exited;
}

/** What the tools really did: the verdict comes from here, not from the store. */
function effects(dir: string): Array<{ tool: string; args: Record<string, unknown>; pid: number }> {
  return readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe("child runs across processes (SQLite)", () => {
  it("a parent with three children survives a SIGKILL of the parent's worker and of its children's worker: each child runs once, the parent publishes once", {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-children-"));
    dirs.push(dir);
    // The parent's worker starts it: it waits for its three children, whose worker is the only one to serve them.
    const parents = worker(dir, "start", "report");
    await parents.line(`asleep ${RUN}`);
    const childWorker = worker(dir, "serve", "research");
    // All three children asleep in the children's worker (none inside a tool, which would leave its call in doubt):
    // both workers die, the parent waiting, the children asleep.
    await printedTimes(childWorker, `asleep ${RUN}.`, 3);
    await killed(parents.child);
    await killed(childWorker.child);
    const parentsAgain = worker(dir, "serve", "report");
    const childWorkerAgain = worker(dir, "serve", "research");
    await parentsAgain.line("done");
    await killed(childWorkerAgain.child);

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
    expect(published[0]?.pid).toBe(parentsAgain.child.pid);
    // Every fetch was the first children's worker's, every summary the second's: each child went on where it was.
    expect(new Set(made.filter((e) => e.tool === "fetch").map((e) => e.pid))).toEqual(new Set([childWorker.child.pid]));
    expect(new Set(made.filter((e) => e.tool === "summarize").map((e) => e.pid))).toEqual(
      new Set([childWorkerAgain.child.pid]),
    );
  });
});
