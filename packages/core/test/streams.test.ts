import { describe, expect, it } from "vitest";
import {
  CheckpointStoreCorrupt,
  followRun,
  type FollowedPart,
  InvalidInput,
  MemoryCheckpointStore,
  pruneRuns,
  StreamTooLong,
} from "../src/index.js";
import type { MemoryData } from "../src/internal.js";
import { DurableRun, RunDriver, streamTerms } from "../src/runner.js";
import type { CheckpointStore } from "../src/store.js";
import { KEY, sealer } from "./helpers.js";

/** A run that streams: step 0, then `parts` text parts, then a save of `status`. */
async function streamed(store: CheckpointStore, runId: string, parts: number, status: "running" | "done" | "paused") {
  const { run } = await DurableRun.start({
    store,
    sealer,
    runId,
    name: "chat",
    kind: "loop",
    identity: {},
    data: { n: 0 },
    stream: streamTerms("test", { flushMs: 1, batchParts: 3 }),
  });
  for (let i = 0; i < parts; i++) run.stream?.write({ type: "note", text: `w${i}` });
  await run.save(status, { n: parts });
  if (status === "running") await run.stopLease(true);
  return run;
}

async function follow(store: CheckpointStore, runId: string, from?: number): Promise<FollowedPart[]> {
  const all: FollowedPart[] = [];
  for await (const part of followRun({
    checkpoints: store,
    checkpointKey: KEY,
    runId,
    ...(from === undefined ? {} : { from }),
    pollMs: 5,
  }))
    all.push(part);
  return all;
}

describe("a run's stream", () => {
  it("holds the drive's parts in batches before the checkpoint that counts them; a follower reads them from any offset", async () => {
    const store = new MemoryCheckpointStore();
    await streamed(store, "r", 7, "done");
    const batches = await store.stream("r");
    expect(batches.map((b) => [b.offset, b.count])).toEqual([
      [0, 3],
      [3, 3],
      [6, 2],
    ]);
    const latest = await DurableRun.latest(store, sealer, "r");
    expect(latest.streamed).toBe(8);
    const all = await follow(store, "r");
    expect(all.map((p) => p.part)).toEqual([
      { type: "attempt", attempt: 0 },
      ...Array.from({ length: 7 }, (_, i) => ({ type: "note", text: `w${i}` })),
    ]);
    expect((await follow(store, "r", 4)).map((p) => p.offset)).toEqual([4, 5, 6, 7]);
    expect(await follow(store, "r", 8)).toEqual([]);
  });

  it("joins a model's deltas of one batch into one part, of each kind, and no other parts", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await DurableRun.start({
      store,
      sealer,
      runId: "deltas",
      name: "chat",
      kind: "loop",
      identity: {},
      data: {},
      stream: streamTerms("test", true),
    });
    for (const part of [
      { type: "text-delta", text: "Hel" },
      { type: "text-delta", text: "lo" },
      { type: "reasoning-delta", text: "hm" },
      { type: "reasoning-delta", text: "m" },
      { type: "text-delta", text: "!" },
      { type: "note", text: "a" },
      { type: "note", text: "b" },
    ])
      run.stream?.write(part);
    await run.save("done", {});
    expect((await follow(store, "deltas")).map((p) => p.part)).toEqual([
      { type: "attempt", attempt: 0 },
      { type: "text-delta", text: "Hello" },
      { type: "reasoning-delta", text: "hmm" },
      { type: "text-delta", text: "!" },
      { type: "note", text: "a" },
      { type: "note", text: "b" },
    ]);
  });

  it("ends a follow once the run is paused, and waits for the parts of a run still running", async () => {
    const store = new MemoryCheckpointStore();
    await streamed(store, "paused", 2, "paused");
    expect(await follow(store, "paused")).toHaveLength(3);
    await streamed(store, "open", 2, "running");
    const stop = new AbortController();
    const seen: FollowedPart[] = [];
    const following = (async () => {
      for await (const part of followRun({
        checkpoints: store,
        checkpointKey: KEY,
        runId: "open",
        signal: stop.signal,
        pollMs: 5,
      }))
        seen.push(part);
    })();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen).toHaveLength(3);
    stop.abort();
    await following;
  });

  it("is CheckpointStoreCorrupt when a batch is deleted from the middle, moved, changed or another run's", async () => {
    const tampers: Record<string, (data: MemoryData) => void> = {
      deleted: (data) => data.get("r")!.stream!.splice(1, 1),
      swapped: (data) => {
        const rows = data.get("r")!.stream!;
        rows[1] = { ...rows[1]!, sealed: rows[2]!.sealed };
      },
      changed: (data) => {
        const row = data.get("r")!.stream![0]!;
        data.get("r")!.stream![0] = { ...row, sealed: row.sealed.replace("w1", "w9") };
      },
      "cut short": (data) => data.get("r")!.stream!.pop(),
      spliced: (data) => {
        data.get("r")!.stream![1] = { ...data.get("other")!.stream![1]!, runId: "r" };
      },
    };
    for (const [what, tamper] of Object.entries(tampers)) {
      const data: MemoryData = new Map();
      const store = new MemoryCheckpointStore({ data });
      await streamed(store, "r", 7, "done");
      await streamed(store, "other", 7, "done");
      tamper(data);
      await expect(follow(store, "r"), what).rejects.toThrow(CheckpointStoreCorrupt);
    }
  });

  it("ends with StreamTooLong at its limit, and the run goes on", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await DurableRun.start({
      store,
      sealer,
      runId: "long",
      name: "chat",
      kind: "loop",
      identity: {},
      data: {},
      stream: streamTerms("test", { maxParts: 5 }),
    });
    for (let i = 0; i < 20; i++) run.stream?.write({ type: "note", text: `w${i}` });
    await run.save("done", { ok: true });
    const got: FollowedPart[] = [];
    const error = await (async () => {
      for await (const part of followRun({ checkpoints: store, checkpointKey: KEY, runId: "long" })) got.push(part);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamTooLong);
    expect(got).toHaveLength(4);
    expect((await DurableRun.latest(store, sealer, "long")).status).toBe("done");
  });

  it("a claim that finds fewer parts than the checkpoint counted is CheckpointStoreCorrupt", async () => {
    const data: MemoryData = new Map();
    const store = new MemoryCheckpointStore({ data });
    await streamed(store, "r", 4, "running");
    data.get("r")!.stream!.pop();
    const latest = await DurableRun.latest(store, sealer, "r");
    await expect(DurableRun.claim(store, sealer, latest, { stream: streamTerms("test", true) })).rejects.toThrow(
      CheckpointStoreCorrupt,
    );
  });

  it("refuses stream options of another shape, and a store without the capability, with InvalidInput", () => {
    for (const bad of [{ flushMs: -1 }, { batchParts: 0 }, { batchParts: 1_001 }, { maxParts: 0.5 }, { flush: 1 }])
      expect(() => streamTerms("test", bad as never)).toThrow(InvalidInput);
    const bare: CheckpointStore = new MemoryCheckpointStore();
    const without = Object.assign(Object.create(bare), { appendStream: undefined }) as CheckpointStore;
    const program = { kind: "loop", name: "chat" } as never;
    expect(() => new RunDriver(program, { store: without, sealer, stream: streamTerms("test", true) })).toThrow(
      /no streams capability/,
    );
  });

  it("pruneRuns with streamsOnly drops ended runs' streams and keeps their checkpoints, a page at a time", async () => {
    const store = new MemoryCheckpointStore();
    for (const id of ["a", "b", "c"]) await streamed(store, id, 2, "done");
    await streamed(store, "open", 2, "running");
    await new Promise((resolve) => setTimeout(resolve, 5));
    const options = { checkpoints: store, checkpointKey: KEY, olderThan: Date.now(), streamsOnly: true, limit: 2 };
    const first = await pruneRuns(options);
    expect(first.pruned).toHaveLength(2);
    expect(first.more).toBe(true);
    const second = await pruneRuns({ ...options, cursor: first.next as string });
    expect([...first.pruned, ...second.pruned].sort()).toEqual(["a", "b", "c"]);
    for (const id of ["a", "b", "c"]) {
      expect(await store.stream(id)).toEqual([]);
      expect((await store.latest(id)).status).toBe("done");
    }
    expect(await store.stream("open")).not.toEqual([]);
    // A dropped stream reads as empty, not as corrupt.
    expect(await follow(store, "a")).toEqual([]);
  });
});
