/**
 * Another library running the same tickets flow on the same kind of store,
 * measured next to @durable in the same process.
 */
export interface Peer {
  /** The library and its store, e.g. "LangGraph.js SqliteSaver, durability sync". */
  readonly name: string;
  /** One tickets run under a new id: three steps, one no-op tool call each, checkpointed as the peer does. */
  run(id: string): Promise<void>;
  close(): Promise<void>;
}

/** A peer, or why it did not start (a module missing, a server not answering): the bench skips it with that line. */
export type PeerOrReason = Peer | string;

/** Starts a peer, turning any failure into the one-line reason it is skipped for. */
export async function started(name: string, start: () => Promise<Peer>): Promise<PeerOrReason> {
  try {
    return await start();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return `${name} did not start: ${message.split("\n")[0]}`;
  }
}
