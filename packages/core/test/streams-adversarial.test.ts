import { describe, expect, it } from "vitest";
import { followRun, type FollowedPart, InvalidInput, MemoryCheckpointStore } from "../src/index.js";
import { DurableRun, streamTerms } from "../src/runner.js";
import type { CheckpointStore } from "../src/store.js";
import { KEY, sealer } from "./helpers.js";

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
});
