/** The part of a client the persistence check needs: `CONFIG GET` of several parameters at once. */
export interface ConfigReader {
  configGet?(parameters: string[]): Promise<unknown>;
}

/** What the store asks of a node-redis connection, one node or a cluster alike. */
interface Commands {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  hGetAll(key: string): Promise<Record<string, string>>;
  lRange(key: string, start: number, stop: number): Promise<string[]>;
}

/** A client to one node: what `WAIT` runs on (see `replicas`). */
interface NodeCommands extends ConfigReader {
  /** Optional only for clients made by hand; node-redis's have it. Needed by the `replicas` option. */
  sendCommand?(args: string[]): Promise<unknown>;
}

/** What the store needs of a node-redis client (`createClient()` gives it). */
export interface RedisLikeClient extends Commands, NodeCommands {
  connect(): Promise<unknown>;
  /** Graceful: waits for the replies of commands already sent. */
  close(): Promise<void>;
  /** Forceful: drops the socket, rejects every queued command, stops reconnecting. */
  destroy(): void;
  on(event: "error" | "terminated", listener: (error: Error) => void): unknown;
  on(event: "ready" | "connect", listener: () => void): unknown;
  /** False once closed, destroyed, or given up by its `socket.reconnectStrategy`. */
  readonly isOpen: boolean;
  /** True while connected and able to send commands. */
  readonly isReady: boolean;
}

/** One master of a cluster, as node-redis's `cluster.masters` lists it. */
export interface ClusterNode {
  readonly address: string;
}

/**
 * What the store needs of a node-redis cluster client (`createCluster()`
 * gives it): the commands, routed by their first key to the slot's master
 * (following MOVED and ASK), and each master's own client, for the
 * persistence check and `WAIT`.
 */
export interface RedisLikeCluster extends Commands {
  connect(): Promise<unknown>;
  close(): Promise<void>;
  destroy(): void;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "connect", listener: () => void): unknown;
  /** True from `connect()` until closed or destroyed. */
  readonly isOpen: boolean;
  /** True once the cluster's slots are known. */
  readonly isReady: boolean;
  readonly masters: readonly ClusterNode[];
  nodeClient(node: ClusterNode): Promise<NodeCommands>;
  /** The client of the master that holds the key's slot, as the cluster client knows it. */
  getNodeClientForKey(key: string): Promise<NodeCommands>;
}

/** Either kind: the store's factory may return one or the other. */
export type RedisLike = RedisLikeClient | RedisLikeCluster;

/** Whether a client is a cluster (node-redis's cluster has `masters`; a one-node client does not). */
export function isCluster(client: RedisLike): client is RedisLikeCluster {
  return "masters" in client && "nodeClient" in client;
}

/** The clients whose persistence the store checks: the node, or every master of the cluster. */
export async function nodesOf(client: RedisLike): Promise<NodeCommands[]> {
  if (!isCluster(client)) return [client];
  return Promise.all(client.masters.map((node) => client.nodeClient(node)));
}

/** The client of the node a key's writes go to: the node itself, or the master of the key's slot. */
export function nodeOfKey(client: RedisLike, key: string): Promise<NodeCommands> {
  return isCluster(client) ? client.getNodeClientForKey(key) : Promise.resolve(client);
}
