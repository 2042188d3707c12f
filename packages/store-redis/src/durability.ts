import { StoreNotReady } from "@durable/core/store";
import { nodesOf, type ConfigReader, type RedisLike } from "./client.js";

/**
 * What a Redis's persistence settings break of the store's promise that a
 * resolved write is durable, as one sentence; undefined when they keep it
 * (`appendonly yes` with `appendfsync always`).
 */
function durabilityGap(config: Readonly<Record<string, string>>): string | undefined {
  const appendonly = config["appendonly"];
  const appendfsync = config["appendfsync"];
  if (appendonly !== "yes") {
    return `Redis runs with appendonly ${appendonly ?? "unknown"}: a restart loses every write since the last RDB snapshot (all of them without one); set appendonly yes and appendfsync always`;
  }
  if (appendfsync !== "always") {
    const loss =
      appendfsync === "everysec"
        ? "the last second of acknowledged writes"
        : "acknowledged writes the OS had not yet flushed (up to ~30 s)";
    return `Redis runs with appendfsync ${appendfsync ?? "unknown"}: a crash of Redis or its host can lose ${loss}; set appendfsync always`;
  }
  return undefined;
}

/** The warnings this process gave: each once, however many stores meet the same setting. */
const warned = new Set<string>();

/** A reply Redis refused (ACL `NOPERM`, a renamed or disabled `CONFIG`): the check is skipped. */
function refused(error: unknown): boolean {
  return /^(NOPERM|ERR)\b/.test(String((error as Error | undefined)?.message ?? ""));
}

/**
 * Checks a connected client's persistence once (on a cluster, every
 * master's): warns (one line, once per
 * process and setting) or,
 * with `requireDurable`, refuses with `StoreNotReady` until the setting is
 * changed. A client without `configGet`, or a Redis that refuses `CONFIG
 * GET`, is not checked. A connection failure propagates: the next operation
 * checks again.
 */
export class DurabilityCheck {
  readonly #requireDurable: boolean;
  #settled = false;

  constructor(requireDurable: boolean) {
    this.#requireDurable = requireDurable;
  }

  /** Checks a one-node client's server, or every master of a cluster: the first gap found decides. */
  async check(client: RedisLike): Promise<void> {
    if (this.#settled) return;
    let gap: string | undefined;
    for (const node of await nodesOf(client)) {
      gap = await gapOf(node);
      if (gap !== undefined) break;
    }
    if (gap !== undefined && this.#requireDurable) {
      throw new StoreNotReady(`${gap} (CONFIG SET and redis.conf), or leave requireDurable unset to accept it.`);
    }
    this.#settled = true;
    if (gap === undefined || warned.has(gap)) return;
    warned.add(gap);
    console.warn(`@durable/store-redis: ${gap}, or a finished call may run again after a restart.`);
  }
}

/** A node's gap; undefined when it keeps the promise, or cannot be checked (no `configGet`, `CONFIG` refused). */
async function gapOf(node: ConfigReader): Promise<string | undefined> {
  if (node.configGet === undefined) return undefined;
  try {
    return durabilityGap((await node.configGet(["appendonly", "appendfsync"])) as Record<string, string>);
  } catch (error) {
    if (!refused(error)) throw error;
    return undefined;
  }
}
