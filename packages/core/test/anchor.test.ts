import { describe, expect, it } from "vitest";
import { type RunAnchor, MemoryRunAnchor, type AnchoredHead } from "../src/store.js";
import {
  CheckpointStoreCorrupt,
  Executor,
  InvalidInput,
  MemoryCheckpointStore,
  StoreUnavailable,
  ToolRegistry,
} from "../src/index.js";
import { AnchoredStore, anchoredStore, DurableRun, runStorage } from "../src/runner.js";
import { KEY, scopeFor, sealer } from "./helpers.js";

/** An anchor whose writes fail once `failing` is set, as an anchor that went down. */
class FlakyAnchor extends MemoryRunAnchor {
  failing = false;
  override async advance(runId: string, head: AnchoredHead): Promise<void> {
    if (this.failing) throw new StoreUnavailable("the anchor did not answer");
    return super.advance(runId, head);
  }
}

async function started(store: AnchoredStore, runId = "run-1") {
  return DurableRun.start({ store, sealer, runId, name: "tickets", kind: "flow", identity: {}, data: {} });
}

describe("a store checked against an anchor", () => {
  it("raises the anchor after each write the store acknowledged, to the step, segment and records written", async () => {
    const anchor = new MemoryRunAnchor();
    const store = new AnchoredStore(new MemoryCheckpointStore(), anchor);
    const { run } = await started(store);
    await run.log.append({ round: 1, callId: "c", tool: "t", kind: "started", args: {} });
    expect(await anchor.read("run-1")).toEqual({ step: 0, segment: 0, calls: [1] });
    await run.log.append({ round: 1, callId: "c", tool: "t", kind: "done", args: {}, result: 1 });
    await run.save("running", {});
    expect(await anchor.read("run-1")).toEqual({ step: 1, segment: 0, calls: [2] });
  });

  it("does not run a tool whose started record the anchor did not take: the write fails with the anchor's error", async () => {
    const anchor = new FlakyAnchor();
    const store = new AnchoredStore(new MemoryCheckpointStore(), anchor);
    const { run } = await started(store);
    anchor.failing = true;
    let ran = 0;
    const registry = new ToolRegistry().tool("charge", () => ran++);
    await expect(new Executor(registry).call(scopeFor(run), "pay", "charge", {})).rejects.toThrow(StoreUnavailable);
    expect(ran).toBe(0);
  });

  it("finds a store behind its anchor: an older step, fewer records, a deleted run", async () => {
    const anchor = new MemoryRunAnchor();
    const inner = new MemoryCheckpointStore();
    const store = new AnchoredStore(inner, anchor);
    await started(store);
    await anchor.advance("run-1", { step: 2, segment: 0, calls: [0] });
    await expect(store.latest("run-1")).rejects.toThrow(/latest checkpoint is step 0 .* anchor knows step 2/);
    await anchor.advance("run-1", { step: 0, segment: 0, calls: [3] });
    await expect(store.calls("run-1")).rejects.toThrow(/knows 3 call records in segment 0, and the store holds 0/);
    await inner.delete("run-1");
    await expect(store.latest("run-1")).rejects.toThrow(CheckpointStoreCorrupt);
    // Deleted through the API, the run is forgotten: its id may start afresh.
    await store.delete("run-1");
    expect(await anchor.read("run-1")).toBeUndefined();
  });

  it("is one object per store and anchor, so a process drives each run once whatever runner it goes through", () => {
    const [inner, anchor] = [new MemoryCheckpointStore(), new MemoryRunAnchor()];
    expect(anchoredStore(inner, anchor)).toBe(anchoredStore(inner, anchor));
    expect(anchoredStore(inner, undefined)).toBe(inner);
    expect(anchoredStore(inner, anchor).inProcessOnly).toBe(true);
  });

  it("refuses an anchor that is not a RunAnchor, and an encryption key that is too short", () => {
    const checkpoints = new MemoryCheckpointStore();
    const notAnAnchor = { advance: async () => undefined } as unknown as RunAnchor;
    expect(() => runStorage("FlowRunner", { checkpoints, checkpointKey: KEY, anchor: notAnAnchor })).toThrow(
      /FlowRunner: anchor must be a RunAnchor/,
    );
    expect(() => runStorage("FlowRunner", { checkpoints, encryptionKey: "short" })).toThrow(InvalidInput);
  });
});
