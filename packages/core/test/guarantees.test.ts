import { describe, expect, it } from "vitest";
import { Executor, type JsonValue, ToolRegistry } from "../src/index.js";
import { CheckpointConflict, type CheckpointRow, CheckpointStoreCorrupt, InvalidInput } from "../src/store.js";
import {
  bindAnswers,
  CallScope,
  canonicalJson,
  DurableRun,
  freshPlan,
  planReplay,
  readCallLog,
} from "../src/runner.js";
import { MemoryCheckpointStore, sealer, startRun } from "./helpers.js";

describe("a tool's result", () => {
  it("is seen on the first run exactly as replay gives it: keys sorted, -0 as 0, undefined properties gone", async () => {
    const { store, run } = await startRun();
    const registry = new ToolRegistry().tool("offers", () => ({
      zebra: 1,
      apple: { z: -0, a: undefined, m: [3, -0] },
    }));
    const executor = new Executor(registry);
    const first = await executor.call(
      new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} }),
      "n",
      "offers",
      {},
    );
    await run.flush();
    const plan = planReplay(run.runId, await readCallLog(store, sealer, run.runId, []), 1, registry);
    const replayed = await executor.call(
      new CallScope({ kind: "flow", log: run.log, plan, identity: {} }),
      "n",
      "offers",
      {},
    );
    const seen = (outcome: typeof first) =>
      (outcome.status === "ok" ? outcome.value : null) as Record<string, JsonValue>;
    expect(Object.keys(seen(first))).toEqual(Object.keys(seen(replayed)));
    expect(Object.keys(seen(first))[0]).toBe("apple");
    expect(JSON.stringify(seen(first))).toBe(JSON.stringify(seen(replayed)));
    expect(Object.is((seen(first)["apple"] as Record<string, JsonValue>)["z"], 0)).toBe(true);
    expect("a" in (seen(first)["apple"] as object)).toBe(false);
  });
});

describe("decisions", () => {
  const pending = [{ callId: "c", args: { cents: 500 } }];
  it.each([
    ["false"],
    ["no"],
    [1],
    [0],
    [null],
    [{ approved: "false" }],
    [{ approved: 1 }],
    [{}],
    [{ approved: true, reason: 7 }],
    [[true]],
  ])("refuse %j: only a boolean or { approved: boolean, reason?: string } decides", (given) => {
    expect(() => bindAnswers("r", pending, { c: given } as never)).toThrow(InvalidInput);
  });

  it("take true, false and { approved, reason }", () => {
    expect(bindAnswers("r", pending, { c: true })).toMatchObject([{ callId: "c", approved: true }]);
    expect(bindAnswers("r", pending, { c: { approved: false, reason: "too much" } })).toMatchObject([
      { approved: false, reason: "too much" },
    ]);
  });

  it("refuse decisions that are not an object of call ids", () => {
    expect(() => bindAnswers("r", pending, "yes" as never)).toThrow(InvalidInput);
    expect(() => bindAnswers("r", pending, null as never)).toThrow(InvalidInput);
  });

  it("from an approval port must be booleans too: a malformed answer approves nothing", async () => {
    const { run } = await startRun();
    let refunds = 0;
    const registry = new ToolRegistry().tool("refund", () => ++refunds, { approval: true });
    const executor = new Executor(registry, { approvals: () => ({ approved: "no" }) as never });
    const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} });
    await expect(executor.call(scope, "n", "refund", {})).rejects.toThrow(InvalidInput);
    expect(refunds).toBe(0);
  });
});

describe("run ids and names", () => {
  const emoji = "order 🎟";
  const cut = emoji.slice(0, -1); // half of the emoji: a lone surrogate
  it.each([
    ["a lone high surrogate", cut],
    ["a lone low surrogate", "x\uDC00y"],
    ["a NUL", "a\u0000b"],
    ["a C1 control character", "a\u0085b"],
  ])("refuse %s before anything is written", async (_, id) => {
    const store = new MemoryCheckpointStore();
    await expect(startRun(store, id)).rejects.toThrow(InvalidInput);
    await expect(
      DurableRun.start({ store, sealer, runId: "ok", name: id, kind: "flow", identity: {}, data: {} }),
    ).rejects.toThrow(InvalidInput);
    expect(await store.calls(id)).toEqual([]);
  });

  it("take well-formed text with characters beyond the BMP", async () => {
    const { run } = await startRun(new MemoryCheckpointStore(), emoji);
    expect(run.runId).toBe(emoji);
  });
});

describe("canonical JSON", () => {
  it("refuses an array with a named property, which JSON would drop", () => {
    const items = Object.assign([1, 2], { total: 3 });
    expect(() => canonicalJson({ items }, "state")).toThrow(/state\.items: an array with a named property \("total"\)/);
  });

  it("refuses an Array subclass", () => {
    class Basket extends Array<number> {}
    expect(() => canonicalJson(Basket.from([1]), "state")).toThrow(/a Basket is not a plain array/);
  });
});

/** A store that decides refusals from a head it keeps apart, as SQL and Redis stores do; tests set it by hand. */
class HeadStore extends MemoryCheckpointStore {
  endedByHand = false;
  override async save(runId: string, step: number, row: CheckpointRow): Promise<void> {
    if (this.endedByHand) throw new CheckpointConflict(runId, "the run ended (done).");
    return super.save(runId, step, row);
  }
}

describe("a store's plain head against the sealed checkpoint", () => {
  it("a refusal the sealed latest checkpoint does not allow is CheckpointStoreCorrupt, not a lost race", async () => {
    const store = new HeadStore();
    const { run } = await startRun(store);
    store.endedByHand = true;
    await expect(run.save("running", {})).rejects.toThrow(CheckpointStoreCorrupt);
    const latest = await DurableRun.latest(store, sealer, run.runId);
    await expect(DurableRun.claim(store, sealer, latest)).rejects.toThrow(
      /refused step 1, which its latest sealed checkpoint/,
    );
  });

  it("a refusal the sealed latest allows stays a conflict: another worker holds the run", async () => {
    const { store, run } = await startRun();
    await DurableRun.claim(store, sealer, await DurableRun.latest(store, sealer, run.runId), { takeOver: true });
    await expect(run.save("running", {})).rejects.toThrow(CheckpointConflict);
  });
});
