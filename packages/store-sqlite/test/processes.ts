import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** A child process running a test script with tsx, whose stdout lines can be awaited. */
export class Child {
  readonly process: ChildProcess;
  readonly lines: string[] = [];
  readonly #waiters: Array<{ match: (line: string) => boolean; resolve: (line: string) => void }> = [];
  stderr = "";

  constructor(script: string, args: string[]) {
    const path = fileURLToPath(new URL(script, import.meta.url));
    this.process = spawn(process.execPath, ["--import", "tsx", path, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    this.process.stderr!.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.lines.push(line);
      const i = this.#waiters.findIndex((w) => w.match(line));
      if (i >= 0) this.#waiters.splice(i, 1)[0]!.resolve(line);
    });
  }

  /** The first line (already printed or to come) that matches. */
  waitFor(match: (line: string) => boolean, timeoutMs = 60_000): Promise<string> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching line in ${timeoutMs} ms; stdout: ${this.lines.join(" | ")}; stderr: ${this.stderr}`)), timeoutMs);
      this.#waiters.push({ match, resolve: (line) => (clearTimeout(timer), resolve(line)) });
    });
  }

  send(line: string): void {
    this.process.stdin!.write(`${line}\n`);
  }

  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) {
      return Promise.resolve({ code: this.process.exitCode, signal: this.process.signalCode });
    }
    return new Promise((resolve) => this.process.once("exit", (code, signal) => resolve({ code, signal })));
  }

  kill(): void {
    this.process.kill("SIGKILL");
  }
}

/** How often each `<runId> <tool>` line stands in the side-effect file. */
export function executions(sideEffects: string): Map<string, number> {
  const counts = new Map<string, number>();
  if (!existsSync(sideEffects)) return counts;
  for (const line of readFileSync(sideEffects, "utf8").split("\n").filter(Boolean)) counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}
