import Database from "better-sqlite3";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { ORDER, TICKET_CALLS } from "../workload.js";
import { started, type PeerOrReason } from "./peer.js";

/** Where LangGraph.js keeps its checkpoints: the saver of the same kind as the @durable store it is measured next to. */
export type SaverSpec =
  | { readonly kind: "memory" }
  /** A new file per peer in this folder, with the pragmas the @durable SQLite store uses. */
  | { readonly kind: "sqlite"; readonly dir: string }
  /** A schema per peer in this database. */
  | { readonly kind: "postgresql"; readonly url: string };

/**
 * LangGraph.js's durability modes: "sync" writes each step's checkpoint
 * before the next step starts, as @durable does (like for like); its default
 * ("async") writes it while the next step runs.
 */
const MODES = ["sync", "default"] as const;
type Mode = (typeof MODES)[number];

const SAVER_NAMES = { memory: "MemorySaver", sqlite: "SqliteSaver", postgresql: "PostgresSaver" } as const;

/** The tickets flow in LangGraph.js on one saver, once per durability mode; a peer that fails to start is its reason. */
export function langgraphPeers(spec: SaverSpec): Promise<PeerOrReason[]> {
  return Promise.all(
    MODES.map((mode) => {
      const name = `LangGraph.js ${SAVER_NAMES[spec.kind]}, durability ${mode === "default" ? "default (async)" : mode}`;
      return started(name, async () => {
        const saver = await openSaver(spec, mode);
        const graph = await ticketsGraph(saver.checkpointer);
        const options = mode === "default" ? {} : { durability: mode };
        return {
          name,
          run: async (id) =>
            void (await graph.invoke({ ...ORDER, note: "" }, { configurable: { thread_id: id }, ...options })),
          close: saver.close,
        };
      });
    }),
  );
}

/** The tickets flow as a StateGraph: three nodes in a line, each making one of the same no-op calls. */
async function ticketsGraph(checkpointer: BaseCheckpointSaver) {
  const { Annotation, END, START, StateGraph } = await import("@langchain/langgraph");
  const State = Annotation.Root({
    show: Annotation<string>(),
    seats: Annotation<number>(),
    note: Annotation<string>(),
  });
  const [hold, pay, send] = TICKET_CALLS;
  return new StateGraph(State)
    .addNode("hold", async (s) => ({ note: String(await hold(s)) }))
    .addNode("pay", async (s) => ({ note: String(await pay(s)) }))
    .addNode("send", async (s) => ({ note: String(await send(s)) }))
    .addEdge(START, "hold")
    .addEdge("hold", "pay")
    .addEdge("pay", "send")
    .addEdge("send", END)
    .compile({ checkpointer });
}

// Imported when used, so a missing saver package skips its peers instead of failing the bench. The long-run bench opens them too.
export async function openSaver(
  spec: SaverSpec,
  mode: Mode,
): Promise<{ checkpointer: BaseCheckpointSaver; close(): Promise<void> }> {
  switch (spec.kind) {
    case "memory": {
      const { MemorySaver } = await import("@langchain/langgraph");
      return { checkpointer: new MemorySaver(), close: async () => {} };
    }
    case "sqlite": {
      const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
      // The saver sets WAL itself; synchronous FULL is what the @durable store runs with.
      const db = new Database(`${spec.dir}/langgraph-${mode}.db`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
      return { checkpointer: new SqliteSaver(db), close: async () => void db.close() };
    }
    case "postgresql": {
      const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
      const saver = PostgresSaver.fromConnString(spec.url, { schema: `langgraph_${mode}` });
      try {
        await saver.setup();
      } catch (error) {
        await saver.end();
        throw error;
      }
      return { checkpointer: saver, close: () => saver.end() };
    }
  }
}
