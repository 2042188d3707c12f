import type { BaseCheckpointSaver } from "@langchain/langgraph";
import type { LongFigures } from "../long.js";
import { round } from "../stats.js";
import { openSaver, type SaverSpec } from "./langgraph.js";

/** One message of the loop's history, as the graph keeps it in its `messages` channel. */
interface LoopMessage {
  readonly role: "user" | "assistant" | "tool";
  readonly content: string;
  readonly toolCall?: { readonly id: string; readonly n: number };
}

const SAVER_NAMES = {
  memory: "LangGraph MemorySaver",
  sqlite: "LangGraph SqliteSaver",
  postgresql: "LangGraph PostgresSaver",
};

/**
 * The long run's tool loop in LangGraph.js, the shape its agents take: a
 * two-node cycle (model, tools) over a `messages` channel that appends, on
 * the saver of `spec`'s kind, durability "sync" (each step's checkpoint
 * written before the next step, as @durable does). Measured as
 * `measureLong` measures a store: time per step early and late, the bytes
 * the saver holds per step, and the time to go on from the saver after a
 * failure at step 10 and at the last.
 */
export async function measureLangGraphLong(
  spec: SaverSpec,
  steps: number,
  page: string,
): Promise<LongFigures | string> {
  let saver: Awaited<ReturnType<typeof openSaver>>;
  try {
    saver = await openSaver(spec, "sync");
  } catch (error) {
    return `${SAVER_NAMES[spec.kind]} did not start: ${String(error).split("\n")[0]}`;
  }
  try {
    const asked: number[] = [];
    const graph = await loopGraph(saver.checkpointer, page, { steps, asked, failAt: undefined });
    const prompt = { messages: [{ role: "user", content: "Read every page." } satisfies LoopMessage] };
    const config = (thread: string) => ({
      configurable: { thread_id: thread },
      durability: "sync" as const,
      recursionLimit: 4 * steps + 10,
    });
    await graph.invoke(prompt, config("long"));
    const stepMs = asked.slice(1).map((at, i) => at - (asked[i] as number));
    const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
    const bytes = await savedBytes(spec, saver.checkpointer, "long");

    const recover = async (at: number) => {
      const failing = await loopGraph(saver.checkpointer, page, { steps, asked: [], failAt: at });
      await failing.invoke(prompt, config(`cut-${at}`)).catch(() => undefined);
      // Going on from the saver: the same thread invoked with no new input resumes the failed step.
      const resumed = await loopGraph(saver.checkpointer, page, { steps: 0, asked: [], failAt: undefined });
      const started = performance.now();
      await resumed.invoke(null, config(`cut-${at}`));
      return performance.now() - started;
    };
    return {
      store: SAVER_NAMES[spec.kind],
      steps,
      earlyStepMs: round(mean(stepMs.slice(10, 50)), 2),
      lateStepMs: round(mean(stepMs.slice(-40)), 2),
      bytesPerStep: bytes === undefined ? 0 : Math.round(bytes / steps),
      newBytesPerStep: page.length + 60,
      recoverEarlyMs: round(await recover(10), 1),
      recoverLateMs: round(await recover(steps - 1), 1),
    };
  } finally {
    await saver.close();
  }
}

async function loopGraph(
  checkpointer: BaseCheckpointSaver,
  page: string,
  run: { readonly steps: number; readonly asked: number[]; readonly failAt: number | undefined },
) {
  const { Annotation, END, START, StateGraph } = await import("@langchain/langgraph");
  const State = Annotation.Root({
    messages: Annotation<LoopMessage[]>({ reducer: (had, added) => had.concat(added), default: () => [] }),
  });
  type S = typeof State.State;
  const model = async (state: S): Promise<Partial<S>> => {
    run.asked.push(performance.now());
    const made = state.messages.filter((m) => m.role === "assistant").length;
    if (made === run.failAt) throw new Error("cut off for the benchmark");
    if (made >= run.steps) return { messages: [{ role: "assistant", content: "Read them all." }] };
    return { messages: [{ role: "assistant", content: "", toolCall: { id: `call-${made}`, n: made } }] };
  };
  const tools = async (state: S): Promise<Partial<S>> => {
    const call = state.messages.at(-1)?.toolCall;
    return { messages: [{ role: "tool", content: `${call?.n}: ${page}` }] };
  };
  return new StateGraph(State)
    .addNode("model", model)
    .addNode("tools", tools)
    .addEdge(START, "model")
    .addConditionalEdges("model", (s: S) => (s.messages.at(-1)?.toolCall === undefined ? END : "tools"), ["tools", END])
    .addEdge("tools", "model")
    .compile({ checkpointer });
}

/** The bytes the saver holds for a thread: its checkpoints, their blobs and its pending writes, as stored. */
async function savedBytes(
  spec: SaverSpec,
  checkpointer: BaseCheckpointSaver,
  thread: string,
): Promise<number | undefined> {
  const saver = checkpointer as unknown as {
    db?: { prepare(sql: string): { get(...values: unknown[]): { bytes: number | null } } };
    pool?: { query(sql: string, values: unknown[]): Promise<{ rows: Array<{ bytes: string | null }> }> };
    storage?: Record<string, Record<string, Record<string, unknown[]>>>;
  };
  if (spec.kind === "sqlite" && saver.db !== undefined) {
    const sum = (sql: string) => saver.db?.prepare(sql).get(thread)?.bytes ?? 0;
    return (
      sum("SELECT sum(length(checkpoint) + length(metadata)) AS bytes FROM checkpoints WHERE thread_id = ?") +
      sum("SELECT sum(length(value)) AS bytes FROM writes WHERE thread_id = ?")
    );
  }
  if (spec.kind === "postgresql" && saver.pool !== undefined) {
    const schema = "langgraph_sync";
    const sum = async (sql: string) => Number((await saver.pool?.query(sql, [thread]))?.rows[0]?.bytes ?? 0);
    return (
      (await sum(
        `SELECT sum(octet_length(checkpoint::text) + octet_length(metadata::text)) AS bytes FROM ${schema}.checkpoints WHERE thread_id = $1`,
      )) +
      (await sum(`SELECT sum(octet_length(blob)) AS bytes FROM ${schema}.checkpoint_blobs WHERE thread_id = $1`)) +
      (await sum(`SELECT sum(octet_length(blob)) AS bytes FROM ${schema}.checkpoint_writes WHERE thread_id = $1`))
    );
  }
  if (spec.kind === "memory" && saver.storage !== undefined) {
    const byteLength = (value: unknown) => (value instanceof Uint8Array ? value.byteLength : 0);
    const checkpoints = Object.values(saver.storage[thread] ?? {}).flatMap((byId) => Object.values(byId));
    return checkpoints.reduce<number>((sum, entry) => sum + byteLength(entry[0]) + byteLength(entry[1]), 0);
  }
  return undefined;
}
