/**
 * A `redis-server` process of one's own, on a free local port, its files in a
 * dir of its own, with AOF `appendfsync always`: a node of a test's cluster,
 * or a lone server to measure against one. Never the shared Redis.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./net.js";
import { pingFails } from "./redis.js";

export class RedisNode {
  readonly #args: readonly string[];
  #process: ChildProcess;
  #exited: Promise<void>;

  private constructor(
    readonly port: number,
    args: readonly string[],
  ) {
    this.#args = args;
    [this.#process, this.#exited] = launch(args);
  }

  /**
   * Starts one in `<parent>/<port>` on a free port, with `extra` settings
   * (`--cluster-enabled yes`, …; a cluster node's bus port is free too), and
   * waits until it answers PING.
   */
  static async start(parent: string, extra: readonly string[] = [], cluster = false): Promise<RedisNode> {
    const port = await freePort();
    const dir = join(parent, String(port));
    mkdirSync(dir);
    const bus = cluster ? ["--cluster-port", String(await freePort())] : [];
    const base = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, ...bus];
    const aof = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""];
    const node = new RedisNode(port, [...base, ...aof, ...extra]);
    await node.#answers();
    return node;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return this.#process.exitCode === null && this.#process.signalCode === null;
  }

  /** Sends a signal: SIGKILL crashes it, SIGSTOP freezes it, SIGCONT thaws it. */
  signal(signal: NodeJS.Signals): void {
    this.#process.kill(signal);
  }

  /** SIGKILL, as a crash; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.alive) this.#process.kill("SIGKILL");
    await this.#exited;
  }

  /** Starts a killed node again on its port and files. */
  async restart(): Promise<void> {
    if (this.alive) return;
    [this.#process, this.#exited] = launch(this.#args);
    await this.#answers();
  }

  async #answers(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const error = await pingFails(this.url, 500);
      if (error === undefined) return;
      if (!this.alive || Date.now() > deadline)
        throw new Error(`redis-server did not answer on port ${this.port} (${String(error)}).`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function launch(args: readonly string[]): [ChildProcess, Promise<void>] {
  const child = spawn("redis-server", args, { stdio: "ignore" });
  return [child, new Promise<void>((resolve) => child.once("exit", () => resolve()))];
}
