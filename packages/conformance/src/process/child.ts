import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const TYPESCRIPT = /\.[mc]?ts$/;

/**
 * A child process whose stdout lines can be awaited. A TypeScript script, or
 * one that imports a TypeScript module named in `typescript`, runs with
 * `--import tsx` (tsx must then be installed where the tests run).
 */
export class Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  readonly #waiters: Array<{ match: (line: string) => boolean; resolve: (line: string) => void }> = [];
  stderr = "";

  constructor(script: URL, args: readonly string[], options: { env?: NodeJS.ProcessEnv; typescript?: boolean } = {}) {
    const path = fileURLToPath(script);
    const loader = options.typescript === true || TYPESCRIPT.test(path) ? ["--import", "tsx"] : [];
    this.process = spawn(process.execPath, [...loader, path, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: options.env ?? process.env,
    });
    this.process.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.process.stdin.on("error", () => {});
    createInterface({ input: this.process.stdout }).on("line", (line) => {
      this.lines.push(line);
      const i = this.#waiters.findIndex((w) => w.match(line));
      if (i >= 0) this.#waiters.splice(i, 1)[0]?.resolve(line);
    });
  }

  /** The first line (already printed or to come) that matches; fails after `timeoutMs`, showing what the child printed. */
  waitFor(match: (line: string) => boolean, timeoutMs = 60_000): Promise<string> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no matching line in ${timeoutMs} ms; stdout: ${this.lines.join(" | ")}; stderr: ${this.stderr}`),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        match,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  send(line: string): void {
    this.process.stdin.write(`${line}\n`);
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

/** Whether a module path or URL is TypeScript. */
export function isTypeScript(module: string): boolean {
  return TYPESCRIPT.test(module);
}

/** How often each `<runId> <callId>` stands in a side-effect file (every attempt), for the runs that start with `runIdPrefix`. */
export function executions(effects: string, runIdPrefix = ""): Map<string, number> {
  return counted(effects, runIdPrefix, ([runId, callId]) => `${runId} ${callId}`);
}

/** How often each attempt of a call ran, by `<runId> <callId> <attempt>` (lines `<runId> <callId> <tool> <attempt>`). */
export function attemptExecutions(effects: string, runIdPrefix = ""): Map<string, number> {
  return counted(effects, runIdPrefix, ([runId, callId, , attempt]) => `${runId} ${callId} ${attempt}`);
}

function counted(effects: string, runIdPrefix: string, key: (fields: string[]) => string): Map<string, number> {
  const counts = new Map<string, number>();
  if (!existsSync(effects)) return counts;
  for (const line of readFileSync(effects, "utf8").split("\n")) {
    if (line === "" || !line.startsWith(runIdPrefix)) continue;
    const k = key(line.split(" "));
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}
