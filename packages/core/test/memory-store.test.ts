import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore } from "../src/index.js";
import {
  CheckpointConflict,
  CheckpointNotFound,
  type CheckpointRow,
  type RunStatus,
  UNFINISHED,
} from "../src/store.js";
import { collect } from "./helpers.js";

const row = (over: Partial<CheckpointRow> = {}): CheckpointRow => ({
  status: "running",
  segment: 0,
  name: "tickets",
  kind: "flow",
  sealed: "d1.-.{}",
  ...over,
});

describe("MemoryCheckpointStore compare-and-set", () => {
  it("takes step 0 for a new run, then exactly one past the stored step", async () => {
    const store = new MemoryCheckpointStore();
    await store.save("r", 0, row());
    await store.save("r", 1, row());
    expect((await store.latest("r")).step).toBe(1);
  });

  const refusals: Array<[string, (s: MemoryCheckpointStore) => Promise<void>]> = [
    ["a first step other than 0", (s) => s.save("new", 1, row())],
    ["step 0 when it exists", (s) => s.save("r", 0, row())],
    ["a skipped step", (s) => s.save("r", 2, row())],
    ["a step already taken", (s) => s.save("r", 0, row())],
    ["another flow's run", (s) => s.save("r", 1, row({ name: "other" }))],
    ["another kind's run", (s) => s.save("r", 1, row({ kind: "loop" }))],
    ["an older segment", (s) => s.save("r", 1, row({ segment: 2 })).then(() => s.save("r", 2, row({ segment: 1 })))],
  ];
  it.each(refusals)("refuses %s with CheckpointConflict", async (_, act) => {
    const store = new MemoryCheckpointStore();
    await store.save("r", 0, row());
    await expect(act(store)).rejects.toThrow(CheckpointConflict);
  });

  it.each(["done", "failed"] as RunStatus[])("refuses any save after a %s row", async (status) => {
    const store = new MemoryCheckpointStore();
    await store.save("r", 0, row({ status }));
    await expect(store.save("r", 1, row())).rejects.toThrow(/ended/);
  });

  it("lets exactly one of many concurrent saves of one step win", async () => {
    const store = new MemoryCheckpointStore();
    await store.save("r", 0, row());
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => store.save("r", 1, row({ segment: i }))),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });
});

describe("MemoryCheckpointStore call log", () => {
  it("refuses a record from an older segment after a claim", async () => {
    const store = new MemoryCheckpointStore();
    await store.save("r", 0, row());
    await store.recordCall("r", 0, 0, "a");
    await store.save("r", 1, row({ segment: 1 }));
    await expect(store.recordCall("r", 0, 1, "b")).rejects.toThrow(CheckpointConflict);
    await store.recordCall("r", 1, 0, "c");
  });

  it("refuses a duplicate or skipped number, and a record for an unknown or ended run", async () => {
    const store = new MemoryCheckpointStore();
    await expect(store.recordCall("r", 0, 0, "x")).rejects.toThrow(CheckpointNotFound);
    await store.save("r", 0, row());
    await store.recordCall("r", 0, 0, "a");
    await expect(store.recordCall("r", 0, 0, "dup")).rejects.toThrow(CheckpointConflict);
    await expect(store.recordCall("r", 0, 2, "gap")).rejects.toThrow(CheckpointConflict);
    await store.save("r", 1, row({ status: "done" }));
    await expect(store.recordCall("r", 0, 1, "late")).rejects.toThrow(/ended/);
  });

  it("deletes one run's rows and records and nothing of another", async () => {
    const store = new MemoryCheckpointStore();
    for (const id of ["a", "b"]) {
      await store.save(id, 0, row());
      await store.recordCall(id, 0, 0, id);
    }
    await store.delete("a");
    await expect(store.latest("a")).rejects.toThrow(CheckpointNotFound);
    expect(await store.calls("a")).toEqual([]);
    expect((await store.calls("b")).map((c) => c.sealed)).toEqual(["b"]);
    expect(await collect(store.listUnfinished("tickets"))).toEqual(["b"]);
  });
});

// ---- The store against a small reference model of the protocol ----

type Op =
  | { op: "save"; run: string; step: number; segment: number; status: RunStatus; flow: string }
  | { op: "record"; run: string; segment: number; seq: number }
  | { op: "delete"; run: string };

interface ModelRun {
  steps: Array<{ step: number; segment: number; status: RunStatus; flow: string }>;
  records: Array<{ segment: number; seq: number }>;
}

/** The protocol's rules, written as plainly as possible. Returns the error name, or "ok". */
function applyToModel(model: Map<string, ModelRun>, op: Op): string {
  const run = model.get(op.run);
  const last = run?.steps[run.steps.length - 1];
  if (op.op === "delete") {
    model.delete(op.run);
    return "ok";
  }
  if (op.op === "save") {
    if (last === undefined) {
      if (op.step !== 0) return "CheckpointConflict";
      model.set(op.run, { steps: [{ ...op }], records: [] });
      return "ok";
    }
    // A failed run takes a claim (a raised segment): a retry. A done run takes nothing.
    const ended = last.status === "done" || (last.status === "failed" && op.segment <= last.segment);
    if (ended || op.flow !== last.flow || op.step !== last.step + 1 || op.segment < last.segment)
      return "CheckpointConflict";
    run!.steps.push({ ...op });
    return "ok";
  }
  if (last === undefined) return "CheckpointNotFound";
  const ended = last.status === "done" || last.status === "failed";
  const inSegment = run!.records.filter((r) => r.segment === op.segment).length;
  if (ended || op.segment !== last.segment || op.seq !== inSegment) return "CheckpointConflict";
  run!.records.push({ segment: op.segment, seq: op.seq });
  return "ok";
}

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("save" as const),
    run: fc.constantFrom("a", "b"),
    step: fc.nat(4),
    segment: fc.nat(2),
    status: fc.constantFrom<RunStatus>("running", "running", "paused", "done", "failed"),
    flow: fc.constantFrom("f", "f", "g"),
  }),
  fc.record({ op: fc.constant("record" as const), run: fc.constantFrom("a", "b"), segment: fc.nat(2), seq: fc.nat(3) }),
  fc.record({ op: fc.constant("delete" as const), run: fc.constantFrom("a", "b") }),
);

describe("MemoryCheckpointStore against a reference model", () => {
  it("accepts and refuses exactly what the protocol says, and reads back the model's state", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const store = new MemoryCheckpointStore();
        const model = new Map<string, ModelRun>();
        for (const op of ops) {
          const expected = applyToModel(model, op);
          let actual = "ok";
          try {
            if (op.op === "save")
              await store.save(op.run, op.step, row({ segment: op.segment, status: op.status, name: op.flow }));
            else if (op.op === "record") await store.recordCall(op.run, op.segment, op.seq, `${op.segment}/${op.seq}`);
            else await store.delete(op.run);
          } catch (error) {
            actual = (error as Error).name;
          }
          expect(actual, JSON.stringify(op)).toBe(expected);
        }
        for (const id of ["a", "b"]) {
          const run = model.get(id);
          const last = run?.steps.at(-1);
          if (last === undefined) {
            await expect(store.latest(id)).rejects.toThrow(CheckpointNotFound);
          } else {
            expect(await store.latest(id)).toMatchObject({
              step: last.step,
              segment: last.segment,
              status: last.status,
            });
          }
          expect((await store.calls(id)).map((c) => [c.segment, c.seq])).toEqual(
            (run?.records ?? []).map((r) => [r.segment, r.seq]),
          );
        }
        for (const flow of ["f", "g"]) {
          const unfinished = [...model]
            .filter(([, r]) => r.steps.at(-1)!.flow === flow && UNFINISHED.includes(r.steps.at(-1)!.status))
            .map(([id]) => id);
          expect((await collect(store.listUnfinished(flow))).sort()).toEqual(unfinished.sort());
        }
      }),
      { numRuns: 300 },
    );
  });
});
