import { describe, expect, it } from "vitest";
import { CheckpointConflict, Executor, MemoryCheckpointStore, StoreUnavailable, ToolRegistry } from "../src/index.js";
import type { CheckpointRow, LeaseClaim, RunWrite } from "../src/store.js";
import { RunWriter } from "../src/log/run-writer.js";
import { CallScope, DurableRun, freshPlan, type RunStart } from "../src/runner.js";
import { sealer } from "./helpers.js";

/** A memory store that notes each operation that writes: a batch is one, with the kinds of what it held. */
class CountingStore extends MemoryCheckpointStore {
  readonly commits: string[][] = [];
  override save(runId: string, step: number, row: CheckpointRow, lease?: LeaseClaim): Promise<void> {
    this.commits.push(["save"]);
    return super.save(runId, step, row, lease);
  }
  override recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
    this.commits.push(["record"]);
    return super.recordCall(runId, segment, seq, sealed);
  }
  override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
    this.commits.push(writes.map((w) => w.kind));
    return super.commit(runId, writes);
  }
}

/** The same store without `commit`: it does not batch. */
function unbatched(store: CountingStore): CountingStore {
  Object.defineProperty(store, "commit", { value: undefined });
  return store;
}

const tools = new ToolRegistry()
  .tool("step", (args: { n: number }) => args.n)
  .tool("slow", async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    return "slow";
  });

const start = (store: MemoryCheckpointStore): RunStart => ({
  store,
  sealer,
  runId: "r",
  name: "f",
  kind: "flow",
  identity: {},
  data: { n: 0 },
});

/** Three supersteps of one call each, as the driver takes them: step 0 and each running step saved later. */
async function linearRun(store: MemoryCheckpointStore): Promise<void> {
  const { run } = DurableRun.startLater(start(store));
  const executor = new Executor(tools);
  for (let round = 1; round <= 3; round++) {
    const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(round), identity: {} });
    await executor.call(scope, "node", "step", { n: round });
    if (round < 3) run.saveLater({ n: round });
    else await run.save("done", { n: round });
  }
}

describe("a run's writes", () => {
  it("make four commits for three supersteps of one call each: [step 0, started], [done, step, started] twice, [done, done step]", async () => {
    const store = new CountingStore();
    await linearRun(store);
    expect(store.commits).toEqual([
      ["save", "record"],
      ["record", "save", "record"],
      ["record", "save", "record"],
      ["record", "save"],
    ]);
  });

  it("go one at a time, in the same order, to a store that does not batch", async () => {
    const store = unbatched(new CountingStore());
    await linearRun(store);
    expect(store.commits.flat()).toEqual([
      ...["save", "record"],
      ...["record", "save", "record"],
      ...["record", "save", "record"],
      ...["record", "save"],
    ]);
    expect(store.commits.every((c) => c.length === 1)).toBe(true);
    expect((await store.latest("r")).status).toBe("done");
  });

  it("commit a finished call's done at the end of the turn while a sibling call is slow: a crash then cannot put it in doubt", async () => {
    const store = new MemoryCheckpointStore();
    const { run } = await DurableRun.start(start(store));
    const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} });
    const executor = new Executor(tools);
    const slow = executor.call(scope, "node", "slow", {});
    await executor.call(scope, "node", "step", { n: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    const stored = (await store.calls("r")).map((c) => JSON.parse(c.sealed.slice(c.sealed.indexOf(".", 3) + 1)).kind);
    expect(stored).toEqual(["started", "started", "done"]);
    await slow;
  });

  it("after one commit fails, fail every later write with its error and land none of them", async () => {
    const memory = new MemoryCheckpointStore();
    await DurableRun.start(start(memory));
    let down = true;
    const unavailable = () => Promise.reject(new StoreUnavailable("down (test)"));
    const flaky = new (class extends MemoryCheckpointStore {
      override recordCall(runId: string, segment: number, seq: number, sealed: string): Promise<void> {
        return down ? unavailable() : memory.recordCall(runId, segment, seq, sealed);
      }
      override commit(runId: string, writes: readonly RunWrite[]): Promise<void> {
        return down ? unavailable() : memory.commit(runId, writes);
      }
    })();
    const writer = new RunWriter(flaky, "r");
    const record = (seq: number): RunWrite => ({ kind: "record", segment: 0, seq, sealed: `s${seq}` });
    const waiting = writer.write(record(0), false);
    await expect(writer.write(record(1), true)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(waiting).rejects.toBeInstanceOf(StoreUnavailable);
    down = false;
    await expect(writer.write(record(0), true)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(writer.flush()).rejects.toBeInstanceOf(StoreUnavailable);
    expect(await memory.calls("r")).toEqual([]);
  });

  it("hold at most one checkpoint per batch: a step queued behind another commits after it, on its own", async () => {
    const store = new CountingStore();
    const { run } = DurableRun.startLater(start(store));
    run.saveLater({ n: 1 });
    await run.save("done", { n: 2 });
    expect(store.commits).toEqual([["save"], ["save"], ["save"]]);
    await expect(run.save("running", {})).rejects.toBeInstanceOf(CheckpointConflict);
  });

  it("give a record appended after a failed commit its error at once, never as an unhandled rejection", async () => {
    const store = new MemoryCheckpointStore();
    await DurableRun.start(start(store));
    // Another worker's run under the same id: this one's start is refused, and so is everything after it.
    const { run } = DurableRun.startLater(start(store));
    const call = { round: 1, callId: "c", tool: "step", args: {} };
    await expect(run.log.append({ ...call, kind: "started" })).rejects.toBeInstanceOf(CheckpointConflict);
    await expect(run.log.append({ ...call, kind: "done", result: 1 })).rejects.toBeInstanceOf(CheckpointConflict);
    expect(() => run.throwIfWriteFailed()).toThrow(CheckpointConflict);
  });

  it("leave the lease of the run whose id a refused start wanted: a start that never landed holds none", async () => {
    const store = new MemoryCheckpointStore();
    const lease = { owner: "one-process", ms: 60_000 };
    const first = await DurableRun.start({ ...start(store), lease });
    const second = DurableRun.startLater({ ...start(store), lease });
    // A step queued behind the refused start fails with the same conflict, not as corruption: it says nothing of the store.
    const later = second.run.saveLater({ n: 1 }).landed;
    await expect(second.run.flush()).rejects.toBeInstanceOf(CheckpointConflict);
    await expect(later).rejects.toBeInstanceOf(CheckpointConflict);
    await second.run.stopLease(true);
    expect((await store.leaseOf("r"))?.owner).toBe(first.run.lease.owner);
    await first.run.stopLease(true);
  });
});
