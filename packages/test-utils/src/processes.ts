import { execFile } from "node:child_process";
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
