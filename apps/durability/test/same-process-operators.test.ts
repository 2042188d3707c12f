import { appendFileSync, existsSync, readFileSync } from "node:fs";
import {
  type CheckpointStore,
  cancelRun,
  CheckpointConflict,
  decideInDoubt,
  Executor,
  LeaseHeld,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { callIdOf } from "@durable/core/runner";
import { Call, Flow, FlowRunner } from "@durable/flow";
import { sleep, until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { sqliteFiles } from "./sqlite-files.js";
import { z } from "zod";

// An operator's action and a cancel made in the worker's own process, on a store object of its own or on the
// worker's: each is held to the run's lease as it would be from another process. Judged by the tools' effects file.

const KEY = "same-process-operators-key-0123456789abcdef";
const State = z.object({ note: z.string().default("") });
/** hold (idempotent), then charge (not idempotent): each appends its name to the effects file when it starts. */
const flow = new Flow("seats", { state: State })
  .node("hold", new Call("hold", { args: () => ({}), into: "note" }))
  .node("charge", new Call("charge", { args: () => ({ cents: 4000 }), into: "note" }))
  .edge("hold", "charge")
  .end("charge");
const CHARGE = callIdOf(2, "charge", "charge", { cents: 4000 });

const { files, open } = sqliteFiles("durable-same-process-");

/** What the tools did, as they wrote it. */
function effects(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

/** The tools, writing to `path`; `hangIn` waits inside that tool until `release()`. */
function tools(path: string, hangIn: "hold" | "charge") {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tool = (name: string) => async () => {
    appendFileSync(path, `${name}\n`);
    if (name === hangIn) await gate;
    return name === "hold" ? "held" : "charged";
  };
  const registry = new ToolRegistry().tool("hold", tool("hold"), { idempotent: true }).tool("charge", tool("charge"));
  return { registry, release: () => release() };
}

const runner = (store: CheckpointStore, registry: ToolRegistry) =>
  new FlowRunner(new Executor(registry), { checkpoints: store, checkpointKey: KEY });

describe("an operator action in the worker's own process", () => {
  it("is refused with LeaseHeld while a drive of the same process holds the run: a rerun decision mid-call does not charge twice", async () => {
    const { db, effects: path } = files();
    const t = tools(path, "charge");
    const driving = runner(open(db), t.registry).run(flow, {}, { runId: "r" });
    await until(() => effects(path).includes("charge"));
    // An admin route of the same process, on a store object of its own, reruns the call it sees in doubt.
    const admin = { checkpoints: open(db), checkpointKey: KEY, by: "ops" };
    const decided = await decideInDoubt("r", { [CHARGE]: "rerun" }, admin).catch((error: unknown) => error);
    // A worker of the same process, on a third store object, serves the flow meanwhile.
    const worker = startWorker({
      serve: [runner(open(db), t.registry).served(flow)],
      pollMs: 20,
      maxPollMs: 20,
      stopOnSignals: false,
    });
    await sleep(300);
    t.release();
    const outcome = await driving.catch((error: unknown) => error);
    await worker.stop();
    // charge ran once: the decision was refused, the run's drive went on to the end.
    expect(effects(path)).toEqual(["hold", "charge"]);
    expect(decided).toBeInstanceOf(LeaseHeld);
    expect(outcome).toMatchObject({ status: "done" });
  });
});

describe("a cancel from the worker's own process", () => {
  for (const how of ["FlowRunner.cancel", "cancelRun on the worker's store"] as const) {
    it(`reaches the run its runner drives and fences it: the next tool never runs (${how})`, async () => {
      const { db, effects: path } = files();
      const t = tools(path, "hold");
      const store = open(db);
      const worker = runner(store, t.registry);
      const driving = worker.run(flow, {}, { runId: "r" });
      void driving.catch(() => undefined);
      await until(() => effects(path).includes("hold"));
      const cancelled = await (how === "FlowRunner.cancel"
        ? worker.cancel(flow, "r", "customer left")
        : cancelRun("r", "customer left", { checkpoints: store, checkpointKey: KEY, by: "ops" })
      ).catch((error: unknown) => error);
      t.release();
      const outcome = await driving.catch((error: unknown) => error);
      await sleep(100);
      // charge never started: the drive's next write (hold's outcome, with charge's start) was refused.
      expect(effects(path)).toEqual(["hold"]);
      expect(cancelled).toBeGreaterThan(0);
      expect(outcome).toBeInstanceOf(CheckpointConflict);
      expect(await store.latest("r")).toMatchObject({ status: "failed" });
    });
  }
});
