import { type CheckpointStore, followRun, ToolRegistry } from "@durable/core";
import { type LoopModel, streamToolLoop } from "@durable/loop";
import { latencyOf, round } from "./stats.js";
import { orDash, textTable } from "./table.js";
import { KEY } from "./workload.js";

/** What one store did on a streamed reply, with and without the run's durable stream. */
export interface StreamFigures {
  readonly store: string;
  readonly tokens: number;
  /** ms from the call to the first token the caller got, median of the runs: without the durable stream, and with it. */
  readonly firstTokenMs: readonly [off: number, on: number];
  /** µs from the model giving a token to the caller getting it, p50 and p99 over every token of every run. */
  readonly tokenP50Us: readonly [off: number, on: number];
  readonly tokenP99Us: readonly [off: number, on: number];
  /** ms of the whole reply (the model's pace plus what the loop adds), median of the runs. */
  readonly replyMs: readonly [off: number, on: number];
  /** ms from the model giving a token to a follower (`followRun`, this process) getting it, p50 and p99. */
  readonly followLagMs?: { readonly p50: number; readonly p99: number };
  /** Bytes the store holds of the run's stream (its sealed batches) per 1,000 tokens, and the tokens' own text. */
  readonly streamBytesPer1000?: number;
  readonly textBytesPer1000: number;
}

/** How a token looks: a word and a space, as a model streams it. */
const token = (i: number) => `w${i % 1000} `;

/** Runs measured per side; the first of each is a warm-up and is not counted. */
const RUNS = 6;

/**
 * A model streaming `tokens` tokens, one every `paceMs` (a fast model's
 * 1,000 tokens a second at 1), noting when it gave each.
 */
function tokenModel(tokens: number, paceMs: number, given: number[]): LoopModel {
  return {
    async reply(_messages, _tools, options = {}) {
      let text = "";
      for (let i = 0; i < tokens; i++) {
        await new Promise((resolve) => setTimeout(resolve, paceMs));
        const word = token(i);
        text += word;
        given.push(performance.now());
        options.onPart?.({ type: "text-delta", text: word });
      }
      return { text, toolCalls: [] };
    },
  };
}

/** One streamed reply; the latencies of its tokens, as the caller got them (and a follower, with `stream`). */
async function reply(store: CheckpointStore, runId: string, tokens: number, stream: boolean) {
  const given: number[] = [];
  const started = performance.now();
  const loop = streamToolLoop(tokenModel(tokens, 1, given), new ToolRegistry(), [{ role: "user", content: "Go" }], {
    checkpoints: store,
    checkpointKey: KEY,
    runId,
    ...(stream ? { stream: true } : {}),
  });
  const got: number[] = [];
  const followed: number[] = [];
  const following = stream ? follow(store, runId, followed) : Promise.resolve();
  for await (const part of loop) if (part.type === "text-delta") got.push(performance.now());
  await loop.result;
  await following;
  const ended = performance.now();
  return {
    runId,
    firstTokenMs: (got[0] ?? ended) - started,
    tokenUs: got.map((at, i) => (at - (given[i] ?? at)) * 1000),
    replyMs: ended - started,
    lagMs: followed.map((at, i) => at - (given[i] ?? at)),
  };
}

/** Follows the run's stream as another reader would, noting when each token arrived. */
async function follow(store: CheckpointStore, runId: string, at: number[]): Promise<void> {
  // The run's step 0 lands first: a follower of an unknown run is told so.
  for (let i = 0; i < 200; i++) {
    if ((await store.stream?.(runId))?.length) break;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  for await (const { part } of followRun({ checkpoints: store, checkpointKey: KEY, runId, pollMs: 20 })) {
    // A part holds the tokens of one batch: each arrived with it.
    const tokens = part["type"] === "text-delta" ? String(part["text"]).split(" ").length - 1 : 0;
    for (let i = 0; i < tokens; i++) at.push(performance.now());
  }
}

/** Bytes of the run's stream as the store keeps it: its sealed batches. */
async function streamBytes(store: CheckpointStore, runId: string): Promise<number> {
  let bytes = 0;
  for (let from = 0; ; ) {
    const page = (await store.stream?.(runId, from)) ?? [];
    const last = page.at(-1);
    if (last === undefined) return bytes;
    for (const batch of page) bytes += batch.sealed.length;
    from = last.offset + last.count;
  }
}

const median = (values: readonly number[]) => latencyOf(values).p50;

/** The figures of one store: `RUNS` replies of `tokens` tokens without the durable stream, then with it. */
export async function measureStreams(name: string, open: () => Promise<CheckpointStore>, tokens: number) {
  const store = await open();
  try {
    const streams = store.appendStream !== undefined;
    const sides = [];
    for (const on of streams ? [false, true] : [false]) {
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await reply(store, `stream-${on}-${i}-${Date.now()}`, tokens, on));
      sides.push(runs.slice(1));
    }
    const [off = [], on = off] = sides;
    const tokenUs = (runs: typeof off) => latencyOf(runs.flatMap((run) => run.tokenUs));
    const pair = (of: (runs: typeof off) => number) => [round(of(off)), round(of(on))] as const;
    const lag = latencyOf(on.flatMap((run) => run.lagMs));
    const runId = streams ? on.at(-1)?.runId : undefined;
    const figures: StreamFigures = {
      store: name,
      tokens,
      firstTokenMs: pair((runs) => median(runs.map((run) => run.firstTokenMs))),
      tokenP50Us: pair((runs) => tokenUs(runs).p50),
      tokenP99Us: pair((runs) => tokenUs(runs).p99),
      replyMs: pair((runs) => median(runs.map((run) => run.replyMs))),
      ...(streams ? { followLagMs: { p50: round(lag.p50), p99: round(lag.p99) } } : {}),
      ...(runId === undefined
        ? {}
        : { streamBytesPer1000: Math.round(((await streamBytes(store, runId)) / tokens) * 1000) }),
      textBytesPer1000: Math.round(
        (Array.from({ length: tokens }, (_, i) => token(i)).join("").length / tokens) * 1000,
      ),
    };
    return figures;
  } finally {
    await store.close();
  }
}

export function streamsTable(figures: readonly StreamFigures[]): string[] {
  const both = (pair: readonly [number, number], digits = 1) =>
    `${pair[0].toFixed(digits)} / ${pair[1].toFixed(digits)}`;
  return [
    `A streamed reply of ${figures[0]?.tokens ?? 0} tokens, one a ms; each pair is without / with the run's durable stream (stream: true).`,
    ...textTable(figures, (f) => f.store, [
      ["first token ms", (f) => both(f.firstTokenMs)],
      ["token p50 µs", (f) => both(f.tokenP50Us)],
      ["token p99 µs", (f) => both(f.tokenP99Us)],
      ["reply ms", (f) => both(f.replyMs, 0)],
      [
        "follower lag p50/p99 ms",
        (f) =>
          f.followLagMs === undefined ? "-" : `${f.followLagMs.p50.toFixed(0)} / ${f.followLagMs.p99.toFixed(0)}`,
      ],
      ["stream bytes / 1k tokens", (f) => orDash(f.streamBytesPer1000)],
      ["text bytes / 1k tokens", (f) => String(f.textBytesPer1000)],
    ]),
  ];
}
