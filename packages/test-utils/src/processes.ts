import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

/** What a script run in a child process printed, and how it ended. */
export interface ScriptRun {
  readonly code: number;
  readonly stdout: string[];
  readonly stderr: string;
}

/** Runs a TypeScript test script in a child process to its end (with the `tsx` of the package whose tests run it). */
export function runScript(script: URL, args: readonly string[]): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", fileURLToPath(script), ...args], (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout: stdout.split("\n").filter(Boolean), stderr });
    });
  });
}
