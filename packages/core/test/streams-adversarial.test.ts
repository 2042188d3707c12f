import { describe, expect, it } from "vitest";
import {
  CheckpointNotFound,
  CheckpointStoreCorrupt,
  followRun,
  type FollowedPart,
  InvalidInput,
  MemoryCheckpointStore,
  StreamTooLong,
} from "../src/index.js";
import type { MemoryData } from "../src/internal.js";
import { DurableRun, streamTerms } from "../src/runner.js";
import type { CheckpointStore, StoredCheckpoint } from "../src/store.js";
import { collect, KEY, sealer } from "./helpers.js";

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

/** Step 0 of a run that streams (a batch every ms, of `batchParts` parts). */
function start(store: CheckpointStore, runId: string, terms: object = { flushMs: 1 }) {
  return DurableRun.start({
    store,
    sealer,
    runId,
    name: "chat",
    kind: "loop",
    identity: {},
    data: {},
    stream: streamTerms("test", terms),
  });
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a run's stream, attacked", () => {
  it("refuses a part that is not plain JSON with a type where it is written, and streams on", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await start(store, "bad");
    const stream = run.stream;
    const bad = [
      { type: "tool-call", args: { when: new Date() } },
      { type: "note", n: 10n },
      { text: "no type" },
      { type: 7 },
      { type: "" },
      { type: "deep", v: JSON.parse(`${"[".repeat(511)}${"]".repeat(511)}`) },
    ];
    for (const part of bad)
      expect(() => stream?.write(part as never), JSON.stringify(Object.keys(part))).toThrow(InvalidInput);
    // A delta is kept as its type and text, whatever object brought them.
    stream?.write(
      new (class {
        type = "text-delta";
        text = "a class";
      })() as never,
    );
    stream?.write({ type: "note", text: "fine" });
    // A batch sealed in a timer: had a bad part got through, it would throw where nothing catches it.
    await wait(20);
    await run.save("done", {});
    expect((await follow(store, "bad")).map((p) => p.part)).toEqual([
      { type: "attempt", attempt: 0 },
      { type: "text-delta", text: "a class" },
      { type: "note", text: "fine" },
    ]);
  });

  it("marks every part a cut-off drive wrote abandoned, however many batches lie before the attempt that says so", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await start(store, "long", { flushMs: 1, batchParts: 1 });
    for (let i = 0; i < 1_100; i++) run.stream?.write({ type: "note", i });
    await run.flush();
    await run.stopLease(true);
    // Cut off with 1,101 batches no checkpoint counted: more than one page of the store's.
    const { run: next } = await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, "long"), {
      stream: streamTerms("test", true),
    });
    await next.save("done", {});
    for (const from of [0, 1, 700]) {
      const notes = (await follow(store, "long", from)).filter((p) => p.part.type === "note");
      expect(notes.length, `from ${from}`).toBe(1_100 - Math.max(0, from - 1));
      expect(notes.every((p) => p.abandoned)).toBe(true);
    }
  });

  it("is CheckpointStoreCorrupt when the stream ends short of what a checkpoint counted, and ends quietly when it was dropped", async () => {
    for (const status of ["done", "running"] as const) {
      const data: MemoryData = new Map();
      const store = new MemoryCheckpointStore({ data });
      const { run } = await start(store, status, { flushMs: 1, batchParts: 2 });
      for (let i = 0; i < 5; i++) run.stream?.write({ type: "note", i });
      await run.save(status, {});
      await run.stopLease(true);
      data.get(status)?.stream?.pop();
      await expect(follow(store, status), status).rejects.toThrow(CheckpointStoreCorrupt);
      await expect(follow(store, status, 4), status).rejects.toThrow(CheckpointStoreCorrupt);
    }
    const store = new MemoryCheckpointStore();
    const { run } = await start(store, "dropped");
    run.stream?.write({ type: "note" });
    await run.save("done", {});
    await store.dropStream("dropped");
    expect(await follow(store, "dropped")).toEqual([]);
  });

  it("marks the parts of a drive a cancel cut off abandoned: no drive comes after to say so", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await start(store, "cut");
    run.stream?.write({ type: "note", text: "saved" });
    await run.save("running", { n: 1 });
    run.stream?.write({ type: "note", text: "cut off" });
    await wait(20);
    const latest = await DurableRun.latest(store, sealer, "cut");
    await DurableRun.end(store, sealer, latest, { takeOver: true, data: { cancelled: true } });
    for (const from of [0, 2]) {
      const parts = await follow(store, "cut", from);
      expect(parts.filter((p) => !p.abandoned).map((p) => p.part["text"] ?? p.part.type)).toEqual(
        from === 0 ? ["attempt", "saved"] : [],
      );
      expect(parts.filter((p) => p.abandoned).map((p) => p.part["text"])).toEqual(["cut off"]);
    }
  });

  it("a failed step's parts are abandoned with it: a retry runs it again", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await start(store, "failed");
    run.stream?.write({ type: "note", text: "saved" });
    await run.save("running", { n: 1 });
    run.stream?.write({ type: "note", text: "of the step that failed" });
    await run.save("failed", { error: "boom" });
    expect((await DurableRun.latest(store, sealer, "failed")).streamed).toBe(2);
    const parts = await follow(store, "failed");
    expect(parts.filter((p) => p.abandoned).map((p) => p.part["text"])).toEqual(["of the step that failed"]);
    // A retry's attempt says so too, and what it streams is live.
    const { run: retry } = await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, "failed"), {
      stream: streamTerms("test", true),
    });
    retry.stream?.write({ type: "note", text: "again" });
    await retry.save("done", {});
    const after = await follow(store, "failed");
    expect(after.filter((p) => !p.abandoned).map((p) => p.part["text"] ?? p.part.type)).toEqual([
      "attempt",
      "saved",
      "attempt",
      "again",
    ]);
    expect(after[3]?.part).toEqual({ type: "attempt", attempt: 1, abandons: { from: 2, to: 3 } });
  });

  it("reads nothing for a follow aborted before it began, and an unknown run is CheckpointNotFound", async () => {
    const store = new MemoryCheckpointStore();
    const aborted = AbortSignal.abort();
    const options = { checkpoints: store, checkpointKey: KEY, runId: "never", signal: aborted };
    expect(await collect(followRun(options))).toEqual([]);
    await expect(follow(store, "never")).rejects.toThrow(CheckpointNotFound);
  });

  it("does not end a follow early when the run is taken up again between its last two reads", async () => {
    let resume: (() => Promise<void>) | undefined;
    class Racing extends MemoryCheckpointStore {
      override async latest(runId: string): Promise<StoredCheckpoint> {
        const row = await super.latest(runId);
        const go = resume;
        resume = undefined;
        await go?.();
        return row;
      }
    }
    const store = new Racing();
    const { run } = await start(store, "race");
    await run.save("paused", {});
    let later: Promise<void> | undefined;
    // The follower reads the run paused; before its last read a resume claims it and streams on.
    resume = async () => {
      const paused = await DurableRun.latest(store, sealer, "race");
      const { run: resumed } = await DurableRun.claim(store, sealer, paused, { stream: streamTerms("test", true) });
      resumed.stream?.write({ type: "note", text: "first" });
      resumed.stream?.settle();
      await resumed.flush();
      later = (async () => {
        await wait(30);
        resumed.stream?.write({ type: "note", text: "second" });
        await resumed.save("paused", {});
      })();
    };
    const parts = await follow(store, "race");
    await later;
    expect(parts.map((p) => p.part["text"] ?? p.part.type)).toEqual(["attempt", "attempt", "first", "second"]);
  });

  it("reaches maxParts at a checkpoint, and each drive after adds only its stream-full part; the run goes on and ends", async () => {
    const store = new MemoryCheckpointStore();
    const terms = { flushMs: 1, maxParts: 4 };
    const { run } = await start(store, "full", terms);
    for (const text of ["a", "b", "c", "d"]) run.stream?.write({ type: "note", text });
    await run.save("paused", {});
    expect((await DurableRun.latest(store, sealer, "full")).streamed).toBe(4);
    for (const status of ["paused", "done"] as const) {
      const latest = await DurableRun.latest(store, sealer, "full");
      const { run: resumed } = await DurableRun.claim(store, sealer, latest, { stream: streamTerms("test", terms) });
      resumed.stream?.write({ type: "note", text: "after the limit" });
      await resumed.save(status, {});
    }
    const latest = await DurableRun.latest(store, sealer, "full");
    expect([latest.status, latest.streamed]).toEqual(["done", 6]);
    for (const from of [0, 3, 5]) {
      const got: FollowedPart[] = [];
      const error = await (async () => {
        for await (const part of followRun({ checkpoints: store, checkpointKey: KEY, runId: "full", from }))
          got.push(part);
      })().catch((e: unknown) => e);
      expect(error, `from ${from}`).toBeInstanceOf(StreamTooLong);
      expect(got.map((p) => p.offset)).toEqual([0, 1, 2].filter((offset) => offset >= from));
    }
  });
});
