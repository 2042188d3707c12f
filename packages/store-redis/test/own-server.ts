import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@durable/test-utils/net";
import { pingFails } from "@durable/test-utils/redis";

/**
 * A `redis-server` of the test's own, on a free port (no persistence unless asked), in a temporary folder: a
 * test may stop it without touching the shared server the other tests use.
 */
export class OwnRedis {
  readonly url: string;
  readonly #child: ChildProcess;
  #exited: Promise<void>;

  private constructor(port: number, persistence: readonly string[]) {
    this.url = `redis://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), "durable-redis-"));
    this.#child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, ...persistence], {
      stdio: "ignore",
    });
    this.#exited = new Promise((resolve) =>
      this.#child.once("exit", () => {
        rmSync(dir, { recursive: true, force: true });
        resolve();
      }),
    );
  }

  /**
   * Starts one (on `port`, or a free one) and waits until it answers PING.
   * `persistence`: its settings, by default none (`--save "" --appendonly no`).
   */
  static async start(
    port?: number,
    persistence: readonly string[] = ["--save", "", "--appendonly", "no"],
  ): Promise<OwnRedis> {
    const server = new OwnRedis(port ?? (await freePort()), persistence);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const error = await pingFails(server.url, 500);
      if (error === undefined) return server;
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`redis-server did not answer at ${server.url} within 10 s (${String(error)}).`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Kills the server (SIGKILL: connections drop at once, as in a crash) and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
    await this.#exited;
  }
}
