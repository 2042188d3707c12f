import { type ChildProcess, execFile } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** What a script run in a child process printed, and how it ended. */
export interface ScriptRun {
  readonly code: number;
  readonly stdout: string[];
  readonly stderr: string;
}

/**
 * Runs a TypeScript test script in a child process to its end (with the
 * `tsx` of the package whose tests run it); with `timeoutMs`, a script still
 * running then is killed (SIGKILL), and ends with a code ≠ 0.
 */
export function runScript(script: URL, args: readonly string[], timeoutMs = 0): Promise<ScriptRun> {
  return new Promise((resolve) => {
    const argv = ["--import", "tsx", fileURLToPath(script), ...args];
    execFile(process.execPath, argv, { timeout: timeoutMs, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout: stdout.split("\n").filter(Boolean), stderr });
    });
  });
}

/**
 * The lines a child process prints on stdout, as they come: `line(prefix)`
 * resolves with the first that starts with `prefix`, and rejects once its
 * stdout closed without one (a process that died or ended early).
 */
export function printedLines(child: ChildProcess): {
  readonly lines: readonly string[];
  line(prefix: string): Promise<string>;
} {
  const lines: string[] = [];
  const waiting: Array<() => void> = [];
  let closed = false;
  const wake = (): void => {
    for (const resolve of waiting.splice(0)) resolve();
  };
  createInterface({ input: child.stdout as NodeJS.ReadableStream })
    .on("line", (line) => {
      lines.push(line);
      wake();
    })
    .on("close", () => {
      closed = true;
      wake();
    });
  const line = async (prefix: string): Promise<string> => {
    for (;;) {
      const found = lines.find((each) => each.startsWith(prefix));
      if (found !== undefined) return found;
      if (closed)
        throw new Error(`the process printed no line starting with ${JSON.stringify(prefix)}: ${lines.join("\n")}`);
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };
  return { lines, line };
}
