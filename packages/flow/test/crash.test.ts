import { describe, expect, it } from "vitest";
import { CheckpointConflict, RecoveryNeedsDecision } from "@durable/core";
import { DyingStore, MemoryCheckpointStore, Tools, runnerOn, settle, ticketsFlow, type CrashPoint } from "./helpers.js";

const TOOLS = ["hold_seats", "charge_card", "email_tickets"] as const;
const ORDER = { show: "Hamlet", seats: 2 };
const FINAL = { show: "Hamlet", seats: 2, note: "mailed Hamlet" };

/** `ran`: the tool ran in the dying worker; `inDoubt`: its call is in doubt on recovery. */
type Point = {
  name: string;
  crash: (tool: string, step: number) => CrashPoint | "inside";
  inDoubt: boolean;
  ran: boolean;
};
const POINTS: Point[] = [
  {
    name: "before the started record",
    crash: (tool) => ({ op: "recordCall", kind: "started", tool, when: "before" }),
    inDoubt: false,
    ran: false,
  },
  {
    name: "after started, before the tool",
    crash: (tool) => ({ op: "recordCall", kind: "started", tool, when: "after" }),
    inDoubt: true,
    ran: false,
  },
  { name: "inside the tool", crash: () => "inside", inDoubt: true, ran: true },
  {
    name: "after the tool, before done",
    crash: (tool) => ({ op: "recordCall", kind: "done", tool, when: "before" }),
    inDoubt: true,
    ran: true,
  },
  {
    name: "after done, before the checkpoint",
    crash: (_, step) => ({ op: "save", step, when: "before" }),
    inDoubt: false,
    ran: true,
  },
  {
    name: "after the checkpoint",
    crash: (_, step) => ({ op: "save", step, when: "after" }),
    inDoubt: false,
    ran: true,
  },
];

describe("a worker dies at every point of every call of the tickets flow", () => {
  const cases = POINTS.flatMap((point) => TOOLS.map((tool, i) => [point.name, tool, point, i + 1] as const));

  it.each(cases)("%s of %s: a fresh runner recovers it", async (_, tool, point, step) => {
    const store = new MemoryCheckpointStore();
    const tools = new Tools();
    const crash = point.crash(tool, step);
    if (crash === "inside") tools.hangInside = tool;
    const flow = ticketsFlow();

    // Worker 1 dies at the point: its run() never settles and it writes nothing more.
    const dying = runnerOn(new DyingStore(store, crash === "inside" ? undefined : crash), tools.registry());
    void dying.run(flow, ORDER, { runId: "order-7" });
    await settle();
    const before = new Map(tools.ran);
    const doneRecords = await doneTools(store);

    // Worker 2: a fresh runner on the same store.
    tools.hangInside = undefined;
    const worker2 = runnerOn(store, tools.registry());
    const needsDecision = point.inDoubt && tool !== "hold_seats";
    if (needsDecision) {
      const error = await worker2.recover(flow, "order-7").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RecoveryNeedsDecision);
      expect((error as RecoveryNeedsDecision).calls.map((c) => c.tool)).toEqual([tool]);
      expect(tools.ran).toEqual(before); // raised before any tool ran
    }
    const ended = point.name === "after the checkpoint" && step === 3;
    if (ended) {
      // The last checkpoint says done: there is nothing to recover.
      await expect(worker2.recover(flow, "order-7")).rejects.toThrow(CheckpointConflict);
      expect((await store.latest("order-7")).status).toBe("done");
    } else {
      const result = await worker2.recover(flow, "order-7", { rerunInDoubt: needsDecision });
      expect(result).toMatchObject({ status: "done", state: FINAL });
    }

    // Every tool whose done record existed before the crash ran exactly once in total.
    for (const finished of doneRecords) expect(tools.count(finished), finished).toBe(1);
    for (const t of TOOLS) expect(tools.count(t)).toBe(t === tool && point.inDoubt && point.ran ? 2 : 1);
  });
});

async function doneTools(store: MemoryCheckpointStore): Promise<string[]> {
  const calls = await store.calls("order-7");
  return calls
    .map((c) => JSON.parse(c.sealed.slice(c.sealed.indexOf(".", 3) + 1)) as { kind: string; tool: string })
    .filter((r) => r.kind === "done")
    .map((r) => r.tool);
}
