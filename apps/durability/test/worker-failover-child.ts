/**
 * One worker process of the failover test, on the SQLite file `db`, with leases of `leaseMs`:
 *   worker-failover-child.ts first <db> <leaseMs> <pollMs>   starts run "r", whose tool never returns: prints "inside <owner>" and renews its lease
 *   worker-failover-child.ts second <db> <leaseMs> <pollMs>  a RunWorker serving the flow, polling every `pollMs`: prints
 *     "serving <owner>" once it polls, and "claimed <owner> <epoch ms> <late ms>" when it takes a run over, late ms being how late its timers ran in the
 *     lease and two polls before (a process the machine starves finds the run late by as much)
 */
import { Executor, startWorker, ToolRegistry, workerId } from "@durable/core";
import { Flow, FlowRunner, Call } from "@durable/flow";
import { LateTimers } from "@durable/test-utils/late-timers";
import { z } from "zod";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const KEY = "failover-test-key-0123456789abcdef";

const [mode, db, leaseMs, pollMs] = process.argv.slice(2);
if ((mode !== "first" && mode !== "second") || db === undefined || leaseMs === undefined || pollMs === undefined) {
  process.stderr.write("usage: worker-failover-child.ts first|second <db> <leaseMs> <pollMs>\n");
  process.exit(2);
}
const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
const timers = new LateTimers();
const registry = new ToolRegistry().tool(
  "wait",
  async () => {
    if (mode === "first") {
      console.log(`inside ${workerId()}`);
      // A tool waiting on something real (a timer here) keeps its process alive, as a request in flight would.
      await new Promise(() => setInterval(() => undefined, 60_000));
    }
    return "waited";
  },
  { idempotent: true },
);
const flow = new Flow("failover", { state: z.object({ note: z.string().default("") }) })
  .node("wait", new Call("wait", { args: () => ({}), into: "note" }))
  .end("wait");
const runner = new FlowRunner(new Executor(registry), {
  checkpoints: store,
  checkpointKey: KEY,
  lease: { ms: Number(leaseMs) },
  events: (event) => {
    if (event.type !== "run.recovered") return;
    const [at, now] = [Date.now(), performance.now()];
    // Asked a few ticks later: a stall that ends with the claim shows when the next tick runs.
    void timers.settled().then(() => {
      const late = timers.within(now - Number(leaseMs) - 2 * Number(pollMs), now);
      console.log(`claimed ${event.owner} ${at} ${Math.round(late)}`);
    });
  },
});
if (mode === "first") await runner.run(flow, {}, { runId: "r" });
else {
  startWorker({ serve: [runner.served(flow)], pollMs: Number(pollMs), maxPollMs: Number(pollMs) });
  console.log(`serving ${workerId()}`);
}
