/**
 * The fault soak's own servers: a Redis and a PostgreSQL in temp dirs on free
 * ports, never the shared ones, which the soak restarts and freezes at will.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freePort } from "@durable/test-utils/net";

/** A server the soak owns: stopped, started again on the same port and data, frozen and thawed. */
export interface OwnServer {
  readonly name: string;
  readonly port: number;
  /** The pids to freeze: the server and, for PostgreSQL, every backend. */
  pids(): number[];
  stop(): Promise<void>;
}

/** Sends a signal to every process of the server: SIGSTOP freezes it, SIGCONT thaws it. */
export function signalAll(server: OwnServer, signal: NodeJS.Signals): void {
  for (const pid of server.pids()) {
    try {
      process.kill(pid, signal);
    } catch {
      // A backend that exited in between.
    }
  }
}

/** Redis with AOF `appendfsync always`: an acknowledged write survives a restart. */
export class OwnRedis implements OwnServer {
  readonly name = "Redis";
  #process: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort(), mkdtempSync(join(tmpdir(), "durable-soak-redis-")));
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = [
      "--port",
      String(this.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      this.dir,
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--save",
      "",
    ];
    this.#process = spawn("redis-server", args, { stdio: "ignore" });
    await untilAnswers(this.port, "PING\r\n", "+PONG");
  }

  pids(): number[] {
    return this.#process?.pid === undefined ? [] : [this.#process.pid];
  }

  /** SIGTERM, as a service manager stops it: Redis flushes the AOF and exits. */
  async stop(): Promise<void> {
    const child = this.#process;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGCONT");
    child.kill("SIGTERM");
    await exited;
  }

  async remove(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** PostgreSQL made by initdb in a temp dir, run by pg_ctl as the postgres user when the soak runs as root. */
export class OwnPostgres implements OwnServer {
  readonly name = "PostgreSQL";
  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly bin: string,
  ) {}

  static async start(): Promise<OwnPostgres> {
    const bin = postgresBin();
    const dir = mkdtempSync(join(serverParent(), "durable-soak-pg-"));
    const pg = new OwnPostgres(await freePort(), dir, bin);
    if (asRoot()) chownSync(dir, pgUser().uid, pgUser().gid);
    pg.#pgRun("initdb", ["-D", pg.data, "-A", "trust", "-U", "postgres", "--no-sync"]);
    await pg.start();
    return pg;
  }

  get data(): string {
    return join(this.dir, "data");
  }

  /** The URL of a database on this server. */
  url(database = "postgres"): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=on`;
    this.#pgRun("pg_ctl", ["-D", this.data, "-o", options, "-l", join(this.dir, "log"), "-w", "start"]);
    await untilAnswers(this.port);
  }

  /** `pg_ctl stop -m fast` (rolls back open transactions, checkpoints) or `-m immediate` (no checkpoint: recovery on start). */
  async stop(mode: "fast" | "immediate" = "fast"): Promise<void> {
    signalAll(this, "SIGCONT");
    if (existsSync(join(this.data, "postmaster.pid")))
      this.#pgRun("pg_ctl", ["-D", this.data, "-m", mode, "-w", "stop"]);
  }

  pids(): number[] {
    const pidFile = join(this.data, "postmaster.pid");
    if (!existsSync(pidFile)) return [];
    const postmaster = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    return [postmaster, ...childrenOf(postmaster)];
  }

  async remove(): Promise<void> {
    await this.stop("immediate").catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }

  #pgRun(tool: string, args: string[]): void {
    const path = join(this.bin, tool);
    const [command, all] = asRoot() ? ["runuser", ["-u", "postgres", "--", path, ...args]] : [path, args];
    execFileSync(command, all as string[], { stdio: "pipe", cwd: this.dir });
  }
}

/**
 * Where a PostgreSQL's folder goes: the temp dir, unless the soak runs as root
 * and the postgres user, who runs the server, cannot enter it (a private
 * `TMPDIR` made by `mktemp -d` is mode 700); then /tmp, which everyone enters.
 */
function serverParent(): string {
  const dir = tmpdir();
  return !asRoot() || othersEnter(dir) ? dir : "/tmp";
}

/** True when every folder from `dir` up to the root lets any user pass through it. */
function othersEnter(dir: string): boolean {
  for (let at = resolve(dir); ; at = dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return false;
    if (at === dirname(at)) return true;
  }
}

function asRoot(): boolean {
  return process.getuid?.() === 0;
}

function pgUser(): { uid: number; gid: number } {
  return { uid: Number(execFileSync("id", ["-u", "postgres"])), gid: Number(execFileSync("id", ["-g", "postgres"])) };
}

/** The newest installed PostgreSQL's bin dir, or PG_BIN. */
function postgresBin(): string {
  if (process.env["PG_BIN"] !== undefined) return process.env["PG_BIN"];
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  if (versions[0] === undefined)
    throw new Error(
      "no PostgreSQL under /usr/lib/postgresql: install it or set PG_BIN to the dir of initdb and pg_ctl.",
    );
  return join(root, versions[0], "bin");
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)])
      .toString()
      .split("\n")
      .map(Number)
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

/** Waits until the port takes a connection (and, given a probe, answers it with the expected text). */
async function untilAnswers(port: number, probe?: string, expected?: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      const done = (result: boolean) => {
        socket.destroy();
        resolve(result);
      };
      socket.setTimeout(1000, () => done(false));
      socket.once("error", () => done(false));
      socket.connect(port, "127.0.0.1", () => {
        if (probe === undefined) return done(true);
        socket.write(probe);
        socket.once("data", (data) => done(data.toString().startsWith(expected ?? "")));
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing answered on port ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
