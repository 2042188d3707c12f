/**
 * A Redis Cluster of the test's own: masters with a replica each, on free
 * local ports, in a temp dir, with AOF `appendfsync always` on every node.
 * Never the shared Redis; `stop()` kills every node and removes the dir.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createCluster } from "redis";
import { redisAdmin } from "./redis.js";
import { sleep } from "./waiting.js";
import { RedisNode } from "./redis-node.js";

const run = promisify(execFile);

export interface OwnClusterOptions {
  /** How many masters (default 3), each with one replica. */
  readonly masters?: number;
  /** `cluster-node-timeout`: how long a master may be silent before its replica takes over (default 3000 ms). */
  readonly nodeTimeoutMs?: number;
  /**
   * Keep the nodes' files on /dev/shm (where there is one): fsync then costs
   * nothing, and a node killed with SIGKILL still keeps every write it
   * acknowledged (the files outlive the process, not the machine). For suites
   * whose nodes only crash as processes, where the disk's fsync is all the time.
   */
  readonly inMemory?: boolean;
}

/** What `CLUSTER NODES` says of one node. */
export interface NodeView {
  readonly id: string;
  readonly port: number;
  readonly role: "master" | "replica";
  /** Its master's id, for a replica. */
  readonly masterId: string | undefined;
  readonly failed: boolean;
  /** Slot ranges, for a master: "0-5460". */
  readonly slots: readonly string[];
}

export class OwnCluster {
  readonly #dir: string;
  readonly #nodes: RedisNode[] = [];

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Starts the nodes, joins them with `redis-cli --cluster create`, and waits until every node says the cluster is ok. */
  static async start(options: OwnClusterOptions = {}): Promise<OwnCluster> {
    const parent = options.inMemory === true && existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    const cluster = new OwnCluster(mkdtempSync(join(parent, "durable-cluster-")));
    try {
      const count = (options.masters ?? 3) * 2;
      const settings = ["--cluster-enabled", "yes", "--cluster-node-timeout", String(options.nodeTimeoutMs ?? 3000)];
      for (let i = 0; i < count; i++) cluster.#nodes.push(await RedisNode.start(cluster.#dir, settings, true));
      await run("redis-cli", [
        "--cluster",
        "create",
        ...cluster.#nodes.map((node) => `127.0.0.1:${node.port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ]);
      await cluster.settled();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** The root nodes to give `createCluster`: every node. */
  get rootNodes(): Array<{ url: string }> {
    return this.#nodes.map((node) => ({ url: `redis://127.0.0.1:${node.port}` }));
  }

  /** A cluster client of its own (connected), for setting up and checking tests. */
  async admin() {
    const client = createCluster({ rootNodes: this.rootNodes });
    client.on("error", () => {});
    await client.connect();
    return client;
  }

  /** The nodes as a live node sees them (`CLUSTER NODES`). */
  async view(): Promise<NodeView[]> {
    for (const node of this.#live()) {
      try {
        return parseNodes(await command(node.port, ["CLUSTER", "NODES"]));
      } catch {
        // A node that is going down: ask the next one.
      }
    }
    throw new Error("no node of the cluster answers.");
  }

  /**
   * Waits until every live node says `cluster_state:ok`, knows every live
   * node and has no failed one taking slots, and every live replica's link
   * to its master is up: a failover or reshard has finished.
   */
  async settled(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let why = "";
    for (;;) {
      why = await this.#unsettled();
      if (why === "") return;
      if (Date.now() > deadline) throw new Error(`the cluster did not settle within ${timeoutMs} ms: ${why}`);
      await sleep(100);
    }
  }

  /**
   * SIGKILLs a master, as a crash: its replica takes over after the node
   * timeout. Resolves once the process is gone; `settled()` waits for the
   * failover. Returns the killed master's port.
   */
  async killMaster(port?: number): Promise<number> {
    const masters = (await this.view()).filter((n) => n.role === "master" && !n.failed && n.slots.length > 0);
    const victim = port ?? masters[0]?.port;
    const node = this.#nodes.find((n) => n.port === victim);
    if (node === undefined) throw new Error("no live master to kill.");
    await node.kill();
    return node.port;
  }

  /** Starts a killed node again on its port, data and `nodes.conf`: a killed master rejoins as a replica. */
  async restart(port: number): Promise<void> {
    const node = this.#nodes.find((n) => n.port === port);
    if (node === undefined) throw new Error(`no node on port ${port}.`);
    await node.restart();
  }

  /** Moves `slots` slots from one master to another, key by key (`redis-cli --cluster reshard`). */
  async reshard(fromPort: number, toPort: number, slots: number): Promise<void> {
    const view = await this.view();
    const id = (port: number) => {
      const node = view.find((n) => n.port === port && n.role === "master");
      if (node === undefined) throw new Error(`no master on port ${port}.`);
      return node.id;
    };
    await run("redis-cli", [
      "--cluster",
      "reshard",
      `127.0.0.1:${toPort}`,
      "--cluster-from",
      id(fromPort),
      "--cluster-to",
      id(toPort),
      "--cluster-slots",
      String(slots),
      "--cluster-yes",
    ]);
  }

  /** Removes every key matching `pattern` on every master (cleanup only: it scans). */
  dropKeys(pattern: string): Promise<void> {
    return dropClusterKeys(pattern, this.rootNodes);
  }

  /** The live master that holds a slot, and its replicas. */
  async masterOf(slot: number): Promise<{ master: NodeView; replicas: NodeView[] }> {
    const view = await this.view();
    const master = view.find((n) => n.role === "master" && !n.failed && slotsOf(n).includes(slot));
    if (master === undefined) throw new Error(`no live master holds slot ${slot}.`);
    return { master, replicas: view.filter((n) => n.masterId === master.id && !n.failed) };
  }

  /** Sends a signal to a node's process: SIGSTOP freezes it, SIGCONT thaws it. */
  signal(port: number, signal: NodeJS.Signals): void {
    this.#nodes.find((n) => n.port === port)?.signal(signal);
  }

  /** One command to one node, on a connection of its own; the reply as node-redis gives it. */
  send(port: number, args: string[]): Promise<unknown> {
    return send(port, args);
  }

  /** The slot of each key (`CLUSTER KEYSLOT`), on one connection. */
  async keySlots(keys: readonly string[]): Promise<number[]> {
    const port = this.#live()[0]?.port;
    if (port === undefined) throw new Error("no node of the cluster is running.");
    const client = await redisAdmin(`redis://127.0.0.1:${port}`);
    try {
      return await Promise.all(keys.map(async (key) => Number(await client.sendCommand(["CLUSTER", "KEYSLOT", key]))));
    } finally {
      client.destroy();
    }
  }

  /** Kills every node and removes the dir; harmless twice. */
  async stop(): Promise<void> {
    await Promise.all(this.#nodes.map((node) => node.kill()));
    rmSync(this.#dir, { recursive: true, force: true });
  }

  #live(): RedisNode[] {
    return this.#nodes.filter((node) => node.alive);
  }

  /** Why the cluster is not settled, or "" when it is. */
  async #unsettled(): Promise<string> {
    const live = this.#live();
    for (const node of live) {
      try {
        const info = await command(node.port, ["CLUSTER", "INFO"]);
        if (!info.includes("cluster_state:ok")) return `node ${node.port} says the cluster is not ok`;
        const view = parseNodes(await command(node.port, ["CLUSTER", "NODES"]));
        const alive = view.filter((n) => !n.failed);
        if (alive.length < live.length) return `node ${node.port} knows ${alive.length} of ${live.length} live nodes`;
        if (view.some((n) => n.failed && n.role === "master" && n.slots.length > 0))
          return `node ${node.port} sees a failed master with slots`;
        const replication = await command(node.port, ["INFO", "replication"]);
        if (replication.includes("role:slave") && !replication.includes("master_link_status:up"))
          return `replica ${node.port} is not in sync with its master`;
      } catch (error) {
        return `node ${node.port}: ${String(error)}`;
      }
    }
    return "";
  }
}

/**
 * Whether this run takes the Redis Cluster tests (the whole kit on a cluster,
 * the cluster soak, the scale measure): always, with `redis-server` and
 * `redis-cli` installed, unless `DURABLE_CLUSTER_TESTS=0` leaves them out of
 * a quick local run. They start six redis-server processes of their own.
 */
export function clusterTestsWanted(): boolean {
  if (process.env["DURABLE_CLUSTER_TESTS"] === "0") {
    console.warn("Skipping the Redis Cluster tests: DURABLE_CLUSTER_TESTS=0.");
    return false;
  }
  return clusterToolsInstalled();
}

/**
 * Whether `redis-server` and `redis-cli` are installed, which a cluster of
 * one's own needs. In CI a missing one fails the run loudly; locally the
 * tests are skipped with a message.
 */
function clusterToolsInstalled(): boolean {
  try {
    execFileSync("sh", ["-c", "command -v redis-server && command -v redis-cli"], { stdio: "ignore" });
    return true;
  } catch {
    if (process.env["CI"] === "true") throw new Error("redis-server or redis-cli is missing; CI needs both.");
    console.warn(
      "Skipping the Redis Cluster tests: install redis-server and redis-cli (Debian: redis-server, redis-tools).",
    );
    return false;
  }
}

/** Removes every key matching `pattern` on every master of the cluster that `rootNodes` lead to (cleanup only: it scans). */
export async function dropClusterKeys(pattern: string, rootNodes: ReadonlyArray<{ url: string }>): Promise<void> {
  const cluster = createCluster({ rootNodes: [...rootNodes] });
  cluster.on("error", () => {});
  await cluster.connect();
  try {
    for (const master of cluster.masters) {
      const client = await cluster.nodeClient(master);
      // One key a time: a DEL of many keys must keep to one slot.
      for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 }))
        for (const key of keys) await client.del(key);
    }
  } finally {
    await cluster.close();
  }
}

/** The slots of a master, lowest first. */
export function slotsOf(master: NodeView): number[] {
  return master.slots
    .flatMap((range) => {
      const [from, to = from] = range.split("-").map(Number);
      return from === undefined || to === undefined ? [] : Array.from({ length: to - from + 1 }, (_, i) => from + i);
    })
    .sort((a, b) => a - b);
}

/** One command to one node, on a connection of its own. */
async function send(port: number, args: string[]): Promise<unknown> {
  const client = await redisAdmin(`redis://127.0.0.1:${port}`);
  try {
    return await client.sendCommand(args);
  } finally {
    client.destroy();
  }
}

/** The same, the reply as text. */
async function command(port: number, args: string[]): Promise<string> {
  return String(await send(port, args));
}

function parseNodes(text: string): NodeView[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const [id = "", address = "", flags = "", master = "-", , , , , ...slots] = line.trim().split(" ");
      const flagSet = new Set(flags.split(","));
      return {
        id,
        port: Number(address.split("@")[0]?.split(":")[1]),
        role: flagSet.has("master") ? "master" : "replica",
        masterId: master === "-" ? undefined : master,
        failed: flagSet.has("fail") || flagSet.has("fail?") || flagSet.has("noaddr"),
        slots: slots.filter((slot) => !slot.startsWith("[")),
      };
    });
}
