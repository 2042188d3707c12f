import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { assertFreshBuild } from "@durable/conformance";

/** How a process that closed its store ended: its exit code (null: killed), and how long it lived after the close. */
export interface AfterClose {
  readonly code: number | null;
  readonly lingeredMs: number;
}

/**
 * Runs `script` (a module that imports `./dist/index.js`, as a worker uses the
 * built package, closes its store and prints "closed") in a process of its own,
 * and waits for it to exit. Timed from the close, not from the spawn: a busy
 * machine may take seconds to start a process. A process still alive
 * `afterCloseMs` after its close (or 30 s after its start, before any close) is
 * killed.
 */
export async function exitAfterClose(script: string, afterCloseMs: number): Promise<AfterClose> {
  assertFreshBuild(new URL("../dist/index.js", import.meta.url));
  const started = Date.now();
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  let closedAt: number | undefined;
  child.stdout.on("data", (bytes: Buffer) => {
    if (closedAt === undefined && bytes.toString().includes("closed")) closedAt = Date.now();
  });
  const watch = setInterval(() => {
    if (Date.now() > (closedAt === undefined ? started + 30_000 : closedAt + afterCloseMs)) child.kill("SIGKILL");
  }, 50);
  try {
    const code = await exited;
    return { code, lingeredMs: closedAt === undefined ? Number.POSITIVE_INFINITY : Date.now() - closedAt };
  } finally {
    clearInterval(watch);
    child.kill("SIGKILL");
  }
}
