import { CheckpointConflict, CheckpointNotFound, InvalidInput } from "@durable/core";
import { type CheckpointStore, MAX_STREAM_PAGE, type StreamBatch } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase, ConformanceGroup } from "./case.js";
import { claim, LONG_MS, OWNER_A, OWNER_B } from "./lease-checks.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";
import { followCase } from "./stream-follow.js";

/** A store with the streams capability: `appendStream`, `stream` and `dropStream` are then known to be there. */
type Streaming = CheckpointStore & Required<Pick<CheckpointStore, "appendStream" | "stream" | "dropStream">>;

const streamRule = (operation: string, expected: string): string => breaks("streams", operation, expected);

/** How many writers race. */
const WRITERS = 8;

function streaming(store: CheckpointStore): Streaming {
  return store as Streaming;
}

/** A batch of `count` parts from `offset` of the run's `segment`, sealed as a writer seals it. */
function batch(h: Harness, runId: string, segment: number, offset: number, count = 1, tag = "part"): StreamBatch {
  const parts = Array.from({ length: count }, (_, i) => ({ type: "text-delta", text: `${tag}-${offset + i}` }));
  const sealed = h.sealer.seal("stream", { runId, segment, offset, count, parts });
  return { segment, offset, count, sealed };
}

/** The batches of the run's stream from `from`, as `{ offset, count, segment }`. */
async function places(store: CheckpointStore, runId: string, from?: number) {
  const rows = await streaming(store).stream(runId, from);
  return rows.map(({ offset, count, segment }) => ({ offset, count, segment }));
}

/** A run held by worker A (step 0, segment 0, a long lease): the drive that writes its stream. */
async function working(h: Harness, flow: string): Promise<string> {
  const runId = h.runId("stream");
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: LONG_MS });
  return runId;
}

const appendCase: ConformanceCase = {
  name: "appendStream appends batches where the stream ends, and stream gives back each batch that holds a part at or after any place, by offset, a page at a time",
  timeout: 120_000,
  async run(h) {
    const flow = h.runId("stream");
    const runId = await working(h, flow);
    const store = streaming(h.store);
    const sent = [batch(h, runId, 0, 0, 3), batch(h, runId, 0, 3, 1), batch(h, runId, 0, 4, 2)];
    for (const b of sent)
      await expectResolves(
        streamRule(`appendStream(runId, { offset: ${b.offset} })`, "accepted"),
        store.appendStream(runId, b),
      );
    const rows = await store.stream(runId);
    expect(
      rows.map(({ runId: id, segment, offset, count, sealed }) => ({ id, segment, offset, count, sealed })),
      streamRule("stream(runId) after three batches", "the three batches, by offset, as appended"),
    ).toEqual(sent.map((b) => ({ id: runId, ...b })));
    expect(
      await places(h.store, runId, 2),
      streamRule("stream(runId, 2)", "every batch from the one holding part 2"),
    ).toEqual([
      { offset: 0, count: 3, segment: 0 },
      { offset: 3, count: 1, segment: 0 },
      { offset: 4, count: 2, segment: 0 },
    ]);
    expect(await places(h.store, runId, 4), streamRule("stream(runId, 4)", "the batch from 4")).toEqual([
      { offset: 4, count: 2, segment: 0 },
    ]);
    expect(await places(h.store, runId, 6), streamRule("stream(runId, 6) at its end", "no batch")).toEqual([]);
    expect(await places(h.store, h.runId("unknown")), streamRule("stream(unknown run)", "no batch")).toEqual([]);
    for (const from of [-1, 0.5])
      await expectRejects(
        InvalidInput,
        streamRule(`stream(runId, ${from})`, "InvalidInput"),
        store.stream(runId, from),
      );

    // A page holds at most MAX_STREAM_PAGE batches; the next page starts where it ended.
    const long = await working(h, flow);
    for (let offset = 0; offset <= MAX_STREAM_PAGE; offset++) await store.appendStream(long, batch(h, long, 0, offset));
    const first = await places(h.store, long);
    expect(
      first.length,
      streamRule(`stream(runId) of ${MAX_STREAM_PAGE + 1} batches`, `a page of ${MAX_STREAM_PAGE}`),
    ).toBe(MAX_STREAM_PAGE);
    expect(
      await places(h.store, long, MAX_STREAM_PAGE),
      streamRule(`stream(runId, ${MAX_STREAM_PAGE})`, "the last batch"),
    ).toEqual([{ offset: MAX_STREAM_PAGE, count: 1, segment: 0 }]);
  },
};

const refusalCase: ConformanceCase = {
  name: "appendStream refuses an unknown run, an ended run, a part out of place, a fenced segment and a malformed batch, writing nothing",
  async run(h) {
    const flow = h.runId("stream");
    const store = streaming(h.store);
    const unknown = h.runId("unknown");
    await expectRejects(
      CheckpointNotFound,
      streamRule("appendStream(unknown run)", "CheckpointNotFound"),
      store.appendStream(unknown, batch(h, unknown, 0, 0)),
    );
    const runId = await working(h, flow);
    await store.appendStream(runId, batch(h, runId, 0, 0, 2));
    for (const offset of [0, 1, 3])
      await expectRejects(
        CheckpointConflict,
        streamRule(`appendStream(runId, { offset: ${offset} }) over a stream of 2`, "CheckpointConflict"),
        store.appendStream(runId, batch(h, runId, 0, offset, 1, "out-of-place")),
      );
    await expectRejects(
      CheckpointConflict,
      streamRule(
        "appendStream(runId, { segment: 1 }) while the latest checkpoint is of segment 0",
        "CheckpointConflict",
      ),
      store.appendStream(runId, batch(h, runId, 1, 2)),
    );
    // Worker B claims the run: worker A's segment is fenced.
    await claim(h, runId, 1, 1, { owner: OWNER_B, ms: LONG_MS, takeOver: true }, { name: flow });
    await expectRejects(
      CheckpointConflict,
      streamRule(
        "appendStream(runId, { segment: 0 }) after a claim raised the segment to 1",
        "CheckpointConflict: fenced",
      ),
      store.appendStream(runId, batch(h, runId, 0, 2, 1, "fenced")),
    );
    await expectResolves(
      streamRule("appendStream(runId, { segment: 1, offset: 2 }) of the claim's drive", "accepted"),
      store.appendStream(runId, batch(h, runId, 1, 2)),
    );
    const malformed = [
      { segment: 1, offset: -1, count: 1, sealed: "x" },
      { segment: 1, offset: 3.5, count: 1, sealed: "x" },
      { segment: -1, offset: 3, count: 1, sealed: "x" },
      { segment: 1, offset: 3, count: 0, sealed: "x" },
      { segment: 1, offset: 3, count: 1_001, sealed: "x" },
      { segment: 1, offset: 3, count: 1, sealed: 7 },
    ];
    for (const bad of malformed)
      await expectRejects(
        InvalidInput,
        streamRule(`appendStream(runId, ${JSON.stringify(bad)})`, "InvalidInput"),
        store.appendStream(runId, bad as never),
      );
    for (const status of ["done", "failed"] as const) {
      const ended = await working(h, flow);
      await h.store.save(ended, 1, h.row(ended, 1, { name: flow, status }));
      await expectRejects(
        CheckpointConflict,
        streamRule(`appendStream to a ${status} run`, "CheckpointConflict"),
        store.appendStream(ended, batch(h, ended, 0, 0)),
      );
      expect(await places(h.store, ended), streamRule(`stream of a ${status} run after a refusal`, "no batch")).toEqual(
        [],
      );
    }
    expect(
      await places(h.store, runId),
      streamRule("stream(runId) after the refused batches", "the two accepted batches only"),
    ).toEqual([
      { offset: 0, count: 2, segment: 0 },
      { offset: 2, count: 1, segment: 1 },
    ]);
  },
};

const raceCase: ConformanceCase = {
  name: "racing writers: of batches appended at one offset exactly one lands; appending again where the stream ends, every batch lands once with no gap",
  timeout: 30_000,
  async run(h) {
    const flow = h.runId("stream");
    const runId = await working(h, flow);
    const stores = [h.store, ...(await Promise.all([1, 2, 3].map(() => h.connect().catch(() => h.store))))];
    const writers = Array.from({ length: WRITERS }, (_, i) => streaming(stores[i % stores.length] as CheckpointStore));
    const first = await Promise.allSettled(
      writers.map((w, i) => w.appendStream(runId, batch(h, runId, 0, 0, 2, `racer-${i}`))),
    );
    expect(
      first.filter((outcome) => outcome.status === "fulfilled"),
      streamRule(`${WRITERS} racing appendStream(runId, { offset: 0 })`, "exactly one accepted"),
    ).toHaveLength(1);
    for (const outcome of first)
      if (outcome.status === "rejected")
        expect(outcome.reason, streamRule("a racing appendStream that lost", "CheckpointConflict")).toBeInstanceOf(
          CheckpointConflict,
        );
    await Promise.all(
      writers.map(async (w, i) => {
        for (;;) {
          const last = (await w.stream(runId)).at(-1);
          const offset = last === undefined ? 0 : last.offset + last.count;
          try {
            await w.appendStream(runId, batch(h, runId, 0, offset, 2, `again-${i}`));
            return;
          } catch (error) {
            if (!(error instanceof CheckpointConflict)) throw error;
          }
        }
      }),
    );
    expect(
      (await places(h.store, runId)).map((p) => p.offset),
      streamRule("stream(runId) after the race", `offsets 0, 2, … ${2 * WRITERS}: no gap, none twice`),
    ).toEqual(Array.from({ length: WRITERS + 1 }, (_, i) => 2 * i));
  },
};

const dropCase: ConformanceCase = {
  name: "dropStream removes a run's stream and nothing else; delete removes it with the run; a run started again under its id streams from 0",
  async run(h) {
    const flow = h.runId("stream");
    const store = streaming(h.store);
    const dropped = await working(h, flow);
    const kept = await working(h, flow);
    await store.appendStream(dropped, batch(h, dropped, 0, 0));
    await store.appendStream(kept, batch(h, kept, 0, 0));
    await store.dropStream(dropped);
    expect(await places(h.store, dropped), streamRule("stream(runId) after dropStream(runId)", "no batch")).toEqual([]);
    expect(
      (await h.store.latest(dropped)).step,
      streamRule("latest(runId) after dropStream(runId)", "its checkpoint, kept"),
    ).toBe(0);
    expect(await places(h.store, kept), streamRule("stream of another run after dropStream", "its batch")).toHaveLength(
      1,
    );
    await store.dropStream(h.runId("unknown"));

    const gone = await working(h, flow);
    await store.appendStream(gone, batch(h, gone, 0, 0, 3));
    await h.store.delete(gone);
    expect(await places(h.store, gone), streamRule("stream(runId) after delete(runId)", "no batch")).toEqual([]);
    await h.store.save(gone, 0, h.row(gone, 0, { name: flow }));
    await expectResolves(
      streamRule("appendStream(runId, { offset: 0 }) to a run started again", "accepted: its stream starts empty"),
      store.appendStream(gone, batch(h, gone, 0, 0)),
    );
  },
};

export const streamGroup: ConformanceGroup = {
  name: "stream",
  proves:
    "a store with the streams capability keeps each run's stream numbered with no gap, refuses the parts of a fenced drive or an ended run, and a follower gets every part of a run taken over mid-reply once, the cut-off attempt's marked",
  skipFor: (store) =>
    store.appendStream === undefined || store.stream === undefined || store.dropStream === undefined
      ? "the store has no streams capability (`appendStream`, `stream` and `dropStream`)"
      : undefined,
  cases: [appendCase, refusalCase, raceCase, dropCase, followCase],
};
