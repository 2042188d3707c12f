import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";

// The example as its users run it: a server process and worker processes on one SQLite file, talked to over HTTP.

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/** A process of the example, and what it printed so far. */
export interface ExampleProcess {
  readonly child: ChildProcess;
  /** Resolves with the first line it printed that matches `pattern`; rejects once it exited without one. */
  line(pattern: RegExp): Promise<string>;
}

/** A server, and the workers a test starts, on a fresh SQLite file. */
export interface Example {
  /** The server's base URL, `http://127.0.0.1:<port>`. */
  readonly base: string;
  /** Starts a worker process; resolves once it serves. `--chat-lease-ms` is the example's, unless given. */
  worker(chatLeaseMs?: number): Promise<ExampleProcess>;
  /** SIGKILLs the server process and starts another on the same port: its clients' connections drop. */
  restartServer(): Promise<void>;
  /** The greetings the tool sent (its outbox), one JSON line each. */
  sent(): string[];
}

/**
 * Registers the test file's clean-up (every process SIGKILLed, the folder
 * removed) and gives what starts an example: a server and, unless `worker`
 * is false, one worker.
 */
export function examples(): (options?: { worker?: boolean; chatLeaseMs?: number }) => Promise<Example> {
  const children: ChildProcess[] = [];
  const folders: string[] = [];
  afterEach(async () => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")) await once(child, "exit");
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  });

  /** Starts the bin with `args`; resolves once a line of its stdout matches `ready`. */
  async function bin(args: string[], ready: RegExp): Promise<ExampleProcess & { ready: string }> {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    const lines: string[] = [];
    let exited = false;
    const waiting = new Set<() => void>();
    const wake = () => {
      for (const resolve of waiting) resolve();
    };
    createInterface({ input: child.stdout! })
      .on("line", (line) => {
        lines.push(line);
        wake();
      })
      .on("close", () => {
        exited = true;
        wake();
      });
    const line = async (pattern: RegExp): Promise<string> => {
      for (;;) {
        const found = lines.find((each) => pattern.test(each));
        if (found !== undefined) return found;
        if (exited) throw new Error(`${args.join(" ")} exited before it printed ${pattern}`);
        await new Promise<void>((resolve) => waiting.add(resolve)).finally(() => waiting.clear());
      }
    };
    return { child, line, ready: await line(ready) };
  }

  return async ({ worker = true, chatLeaseMs } = {}) => {
    const folder = mkdtempSync(join(tmpdir(), "http-example-"));
    folders.push(folder);
    const files = ["--db", join(folder, "runs.db"), "--outbox", join(folder, "outbox.jsonl")];
    let server = await bin([...files, "--port", "0"], /^listening on /);
    const base = server.ready.replace("listening on ", "");
    const example: Example = {
      base,
      async worker(leaseMs = chatLeaseMs) {
        const lease = leaseMs === undefined ? [] : ["--chat-lease-ms", String(leaseMs)];
        return bin([...files, "--role", "worker", ...lease], /^worker: running/);
      },
      async restartServer() {
        if (server.child.kill("SIGKILL")) await once(server.child, "exit");
        server = await bin([...files, "--port", new URL(base).port], /^listening on /);
      },
      sent: () =>
        readFileSync(join(folder, "outbox.jsonl"), { encoding: "utf8", flag: "a+" }).split("\n").filter(Boolean),
    };
    if (worker) await example.worker();
    return example;
  };
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "POST", body: JSON.stringify(body), headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Waits until `check` holds, looking every 20 ms, for at most `ms`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20)))
    if (await check()) return;
  throw new Error(`${what}: not after ${ms} ms`);
}
