import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../src/base/canonical.js";
import type { JsonValue } from "../src/base/json.js";
import { applyDelta, diffJson } from "../src/seal/delta.js";
import { CheckpointStoreCorrupt, type CheckpointStore } from "../src/index.js";
import type { StoredCheckpoint } from "../src/store.js";
import { type CheckpointBody, DurableRun, openHistory, Sealer, sealCheckpoint } from "../src/runner.js";
import { MemoryCheckpointStore, sealer } from "./helpers.js";

/** JSON values whose keys include the names an object inherits, and `__proto__`. */
const json: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 4 })),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.constantFrom("a", "b", "toString", "constructor", "__proto__"), fc.string({ maxLength: 2 })),
      tie("value"),
      { maxKeys: 4 },
    ),
  ),
})).value;

/** `after` built from `before` as a program does: parts kept by reference, items appended, fields changed. */
const evolved = (before: JsonValue): fc.Arbitrary<JsonValue> =>
  fc.oneof(
    json,
    fc.constant(before),
    Array.isArray(before) ? fc.array(json, { maxLength: 3 }).map((more) => [...before, ...more]) : json,
    typeof before === "object" && before !== null && !Array.isArray(before)
      ? fc.tuple(fc.string({ maxLength: 2 }), json).map(([key, value]) => ({ ...before, [key]: value }))
      : json,
  );

describe("changes between two JSON values", () => {
  it("applying the diff of two values to the first gives the second, and leaves the first as it was", () => {
    fc.assert(
      fc.property(
        json.chain((before) => fc.tuple(fc.constant(before), evolved(before))),
        ([before, after]) => {
          const text = canonicalJson(before);
          const ops = diffJson(before, after);
          const applied = applyDelta(JSON.parse(canonicalJson(before)) as JsonValue, ops);
          expect(applied === undefined ? undefined : canonicalJson(applied)).toBe(canonicalJson(after));
          expect(canonicalJson(before)).toBe(text);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("an appended item is one push of that item, whatever the array held before", () => {
    const page = { page: "x".repeat(2000) };
    const before = { messages: Array.from({ length: 1000 }, () => page), round: 1 };
    const after = { ...before, messages: [...before.messages, { page: "new" }], round: 2 };
    expect(diffJson(before, after)).toEqual([
      { at: ["messages"], push: [{ page: "new" }] },
      { at: ["round"], set: 2 },
    ]);
  });

  it("changes made for another value do not apply: a key of an array, a push onto an object", () => {
    expect(applyDelta([1], [{ at: ["a"], set: 1 }])).toBeUndefined();
    expect(applyDelta({ a: 1 }, [{ at: [], push: [1] }])).toBeUndefined();
    expect(applyDelta({ a: 1 }, [{ at: ["b"], drop: true }])).toBeUndefined();
    expect(applyDelta({ a: 1 }, [{ at: ["b", "c"], set: 1 }])).toBeUndefined();
  });
});

/** A memory store whose `history` reads pass through `edit`: what an attacker with write access to the rows does. */
class EditedHistory extends MemoryCheckpointStore {
  edit: (rows: StoredCheckpoint[]) => StoredCheckpoint[] = (rows) => rows;
  override async history(runId: string, from?: number): Promise<StoredCheckpoint[]> {
    return this.edit(await super.history(runId, from));
  }
}

/** A run of `steps` saves that each append one item to `items` (a history): its rows are changes. */
async function grownRun(
  store: CheckpointStore,
  runId: string,
  steps: number,
  options: { snapshotEvery?: number; claimAt?: number } = {},
): Promise<DurableRun> {
  let { run } = await DurableRun.start({
    store,
    sealer,
    runId,
    name: "grows",
    kind: "loop",
    identity: {},
    data: { items: [] },
    snapshotEvery: options.snapshotEvery,
  });
  let items: JsonValue[] = [];
  for (let step = 1; step <= steps; step++) {
    if (step === options.claimAt) {
      // Another worker goes on from what it reads back: its next rows follow the chain as this one's would.
      await run.stopLease(true);
      const latest = await DurableRun.latest(store, sealer, runId);
      ({ run } = await DurableRun.claim(store, sealer, latest, { snapshotEvery: options.snapshotEvery }));
    }
    items = [...items, { step, text: "y".repeat(200) }];
    await run.save("running", { items });
  }
  return run;
}

/** The steps of a run's rows that are snapshots. */
async function snapshotSteps(store: CheckpointStore, runId: string): Promise<number[]> {
  const rows = (await store.history?.(runId)) ?? [];
  return rows.flatMap((row) => (row.sealed.includes('"data":') ? [row.step] : []));
}

describe("the chain of checkpoints", () => {
  it("a run that appends stores each step's change once, and reads back whole", async () => {
    const store = new MemoryCheckpointStore();
    await grownRun(store, "r", 200);
    const rows = await store.history("r");
    const snapshots = rows.filter((row) => row.sealed.includes('"data":'));
    expect(snapshots.length).toBeLessThan(10);
    const bytes = rows.reduce((sum, row) => sum + row.sealed.length, 0);
    // 200 items of ~230 bytes: the rows hold each about twice at most (once as a change, a snapshot or two).
    expect(bytes).toBeLessThan(200 * 230 * 3);
    const latest = await DurableRun.latest(store, sealer, "r");
    expect((latest.data as { items: JsonValue[] }).items).toHaveLength(200);
    expect(openHistory(sealer, "r", rows).map((body) => (body.data as { items: JsonValue[] }).items.length)).toEqual(
      rows.map((_, step) => step),
    );
  });

  it("with snapshotEvery, a snapshot follows at most that many changes", async () => {
    const store = new MemoryCheckpointStore();
    await grownRun(store, "k", 50, { snapshotEvery: 10 });
    const snapshots = await snapshotSteps(store, "k");
    // The size rule may take one sooner (early rows are mostly their header); never more than 10 changes apart.
    const gaps = snapshots.slice(1).map((step, i) => step - (snapshots[i] as number) - 1);
    expect(Math.max(...gaps, 50 - (snapshots.at(-1) as number))).toBe(10);
    expect(((await DurableRun.latest(store, sealer, "k")).data as { items: JsonValue[] }).items).toHaveLength(50);
  });

  it("a worker that claims a run mid-way writes its snapshots where the first worker would have", async () => {
    const store = new MemoryCheckpointStore();
    await grownRun(store, "alone", 60, { snapshotEvery: 7 });
    await grownRun(store, "claimed", 60, { snapshotEvery: 7, claimAt: 30 });
    const alone = await snapshotSteps(store, "alone");
    // The claim is a row of the chain too: the claimed run has one more, and its snapshots fall on the same steps.
    const claimed = (await snapshotSteps(store, "claimed")).filter((step) => step <= 60);
    expect(claimed).toEqual(alone);
    expect(alone.length).toBeGreaterThan(6);
  });

  it("data that is rewritten at every step takes a snapshot before the chain outgrows it", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await DurableRun.start({
      store,
      sealer,
      runId: "c",
      name: "counts",
      kind: "flow",
      identity: {},
      data: { count: 0, note: "z".repeat(500) },
    });
    for (let count = 1; count <= 100; count++) await run.save("running", { count, note: "z".repeat(500) });
    const rows = await store.history("c");
    const latest = await store.latest("c");
    const base = rows.findLastIndex((row) => row.sealed.includes('"data":'));
    const read = rows.slice(base).reduce((sum, row) => sum + row.sealed.length, 0);
    expect(read).toBeLessThanOrEqual(2 * rows[base]!.sealed.length + latest.sealed.length);
    expect((await DurableRun.latest(store, sealer, "c")).data).toEqual({ count: 100, note: "z".repeat(500) });
  });

  const tampers: [string, (rows: StoredCheckpoint[]) => StoredCheckpoint[]][] = [
    ["a change deleted from the middle", (rows) => rows.filter((_, index) => index !== rows.length - 5)],
    [
      "two changes swapped",
      (rows) => {
        const out = [...rows];
        const [a, b] = [out.length - 4, out.length - 3];
        [out[a], out[b]] = [
          { ...out[b]!, step: out[a]!.step },
          { ...out[a]!, step: out[b]!.step },
        ];
        return out;
      },
    ],
    [
      "a change altered",
      (rows) =>
        rows.map((row, index) =>
          index === rows.length - 3 ? { ...row, sealed: row.sealed.replace('"step":', '"step" :') } : row,
        ),
    ],
    ["the snapshot left out", (rows) => rows.filter((row) => !row.sealed.includes('"data":'))],
  ];
  it.each(tampers)(
    "%s is CheckpointStoreCorrupt, for a recovery and for a reader of the whole history",
    async (_, edit) => {
      const store = new EditedHistory();
      await grownRun(store, "t", 40);
      store.edit = edit;
      await expect(DurableRun.latest(store, sealer, "t")).rejects.toThrow(CheckpointStoreCorrupt);
      const rows = await store.history("t");
      expect(() => openHistory(sealer, "t", rows)).toThrow(CheckpointStoreCorrupt);
    },
  );

  it("a change before the latest re-sealed by a forger (its own key, other content) is CheckpointStoreCorrupt: the row after it seals its digest", async () => {
    const store = new EditedHistory();
    await grownRun(store, "f", 20);
    const forger = Sealer.withKeys("a key the workers do not have, 0123456789");
    store.edit = (rows) =>
      rows.map((row) => {
        if (row.step !== 15) return row;
        const body = JSON.parse(row.sealed.slice(row.sealed.indexOf(".", 3) + 1)) as {
          delta: { push: { step: number }[] }[];
        };
        body.delta[0]!.push[0]!.step = 999;
        return { ...row, sealed: forger.seal("checkpoint", body, "checkpoint", { runId: row.runId }) };
      });
    await expect(DurableRun.latest(store, sealer, "f")).rejects.toThrow(/chain of its checkpoints breaks at step 16/);
  });

  it("a chain spliced from another run with the same changes is CheckpointStoreCorrupt", async () => {
    const store = new EditedHistory();
    await grownRun(store, "mine", 30);
    await grownRun(store, "other", 30);
    const theirs = await store.history("other");
    store.edit = (rows) => rows.map((row) => (row.step === 20 ? { ...theirs[20]!, runId: row.runId } : row));
    await expect(DurableRun.latest(store, sealer, "mine")).rejects.toThrow(CheckpointStoreCorrupt);
  });

  it("a change seals no name, kind or identity; a change stored under another name is CheckpointStoreCorrupt", async () => {
    const store = new EditedHistory();
    await grownRun(store, "n", 30);
    const latest = await store.latest("n");
    expect(latest.sealed).not.toMatch(/"flow":|"kind":|"identity":/);
    store.edit = (rows) => rows.map((row) => (row.step === 20 ? { ...row, name: "another" } : row));
    await expect(DurableRun.latest(store, sealer, "n")).rejects.toThrow(
      /breaks at step 20, which is stored as loop "another"/,
    );
    const edited = await store.history("n");
    expect(() => openHistory(sealer, "n", edited)).toThrow(CheckpointStoreCorrupt);
  });

  it.each([
    ["the run's own", {}, undefined],
    ["another", { user: "mallory" }, CheckpointStoreCorrupt],
  ])(
    "a change sealed by an earlier version (name, kind and identity in it) with %s identity: read back, or CheckpointStoreCorrupt",
    async (_, identity, error) => {
      const written = new MemoryCheckpointStore();
      await grownRun(written, "e", 6);
      const rows = await written.history("e");
      const last = rows.at(-1) as StoredCheckpoint;
      const body = JSON.parse(last.sealed.slice(last.sealed.indexOf(".", 3) + 1)) as Record<string, JsonValue>;
      const resealed = sealer.seal(
        "checkpoint",
        { ...body, flow: "grows", kind: "loop", identity },
        "checkpoint",
        last,
      );
      const store = new MemoryCheckpointStore();
      for (const row of [...rows.slice(0, -1), { ...last, sealed: resealed }]) await store.save("e", row.step, row);
      const read = DurableRun.latest(store, sealer, "e");
      if (error === undefined) expect(((await read).data as { items: JsonValue[] }).items).toHaveLength(6);
      else await expect(read).rejects.toThrow(error);
    },
  );

  it("a run saved whole by an earlier version (no link in its rows) goes on with changes", async () => {
    const store = new MemoryCheckpointStore();
    const body: CheckpointBody = {
      runId: "old",
      step: 0,
      status: "running",
      segment: 0,
      name: "grows",
      kind: "loop",
      identity: {},
      calls: [0],
      data: { items: ["a".repeat(2000)] },
    };
    await store.save("old", 0, sealCheckpoint(sealer, body));
    const latest = await DurableRun.latest(store, sealer, "old");
    const { run } = await DurableRun.claim(store, sealer, latest);
    await run.save("running", { items: ["a".repeat(2000), "b"] });
    expect((await store.latest("old")).sealed).toContain('"delta":');
    expect((await DurableRun.latest(store, sealer, "old")).data).toEqual({ items: ["a".repeat(2000), "b"] });
  });

  it("a worker that claims a run goes on with its chain", async () => {
    const store = new MemoryCheckpointStore();
    const first = await grownRun(store, "g", 10);
    await first.stopLease(true);
    const latest = await DurableRun.latest(store, sealer, "g");
    const { run } = await DurableRun.claim(store, sealer, latest, { takeOver: true });
    await run.save("running", { items: [...(latest.data as { items: JsonValue[] }).items, "more"] });
    expect(((await DurableRun.latest(store, sealer, "g")).data as { items: JsonValue[] }).items).toHaveLength(11);
  });
});
