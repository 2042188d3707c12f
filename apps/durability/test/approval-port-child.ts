/**
 * A worker for the approval port crash tests: takes the run `runId` (a flow or
 * a tool loop, by `kind`) on the SQLite file `db`, starting it or, when it is
 * stored, recovering it with `takeOver`. Its one call is a refund that needs
 * an approval; the synchronous approval port appends `asked` to `effects`,
 * then (by `port`) SIGKILLs this process while it waits, denies, or approves.
 * The refund appends `refunded` when it really runs. With `decide` = `rerun`,
 * a recovery that stops for a decision decides "rerun" on every call in doubt
 * (as an operator would, with `decideInDoubt`) and recovers again. Prints the
 * run's result as JSON, with the tools of the calls it found in doubt.
 * DURABLE_FAULT_POINT may kill it at a fault point.
 */
import { appendFileSync } from "node:fs";
import {
  type ApprovalPort,
  ApprovalDenied,
  decideInDoubt,
  Executor,
  RecoveryNeedsDecision,
  ToolRegistry,
} from "@durable/core";
import { CheckpointNotFound } from "@durable/core/store";
import { DurableRun, Sealer } from "@durable/core/runner";
import { Flow, FlowRunner } from "@durable/flow";
import { recoverToolLoop, runToolLoop, type LoopModel } from "@durable/loop";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

const [db, effects, kind, runId, port, decide] = process.argv.slice(2) as [
  string,
  string,
  "flow" | "loop",
  string,
  "kill" | "deny" | "approve",
  string | undefined,
];
const KEY = "approval-port-test-key-0123456789abcdef";
const REFUND = { cents: 5000 };

const effect = (what: string) => appendFileSync(effects, `${what}\n`);
const approvals: ApprovalPort = () => {
  effect("asked");
  if (port === "kill") process.kill(process.pid, "SIGKILL");
  return port === "approve" ? { approved: true } : { approved: false, reason: "over the limit" };
};
const registry = new ToolRegistry().tool(
  "refund",
  () => {
    effect("refunded");
    return "refunded";
  },
  { approval: true },
);
const store = new SQLiteCheckpointStore(db);
const storage = { checkpoints: store, checkpointKey: KEY };

/** Refunds, and says what became of it: a denial is the node's to handle. */
const flow = new Flow("refunds", { state: z.object({ note: z.string() }) })
  .node("refund", async (_s, ctx) => {
    try {
      return { note: String(await ctx.call("refund", REFUND)) };
    } catch (error) {
      if (error instanceof ApprovalDenied) return { note: `denied: ${error.reason ?? ""}` };
      throw error;
    }
  })
  .end("refund");
const runner = new FlowRunner(new Executor(registry, { approvals }), storage);

/** Asks for the refund once, then says what the tool answered. */
const model: LoopModel = {
  async reply(messages) {
    const answer = messages.find((m) => m.role === "tool");
    if (answer !== undefined) return { text: answer.content, toolCalls: [] };
    return { text: "refunding", toolCalls: [{ id: "r1", name: "refund", args: REFUND }] };
  },
};
const loop = { ...storage, approvals, name: "refunds" };

async function start(): Promise<string> {
  if (kind === "flow") {
    const result = await runner.run(flow, { note: "" }, { runId });
    return result.status === "done" ? result.state.note : result.status;
  }
  const result = await runToolLoop(model, registry, [{ role: "user", content: "refund 50" }], { ...loop, runId });
  return result.status === "done" ? result.text : result.status;
}

async function recover(): Promise<string> {
  if (kind === "flow") {
    const result = await runner.recover(flow, runId, { takeOver: true });
    return result.status === "done" ? result.state.note : result.status;
  }
  const result = await recoverToolLoop(model, registry, runId, { ...loop, takeOver: true });
  return result.status === "done" ? result.text : result.status;
}

const stored = await DurableRun.latest(store, Sealer.withKeys(KEY), runId).catch((error: unknown) => {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
});
let inDoubt: string[] = [];
let outcome: string;
if (stored === undefined) outcome = await start();
else {
  try {
    outcome = await recover();
  } catch (error) {
    if (!(error instanceof RecoveryNeedsDecision)) throw error;
    inDoubt = error.calls.map((call) => call.tool);
    if (decide !== "rerun") outcome = "needs a decision";
    else {
      await decideInDoubt(runId, Object.fromEntries(error.calls.map((call) => [call.callId, "rerun"])), {
        ...storage,
        by: "ops",
      });
      outcome = await recover();
    }
  }
}
console.log(JSON.stringify({ outcome, inDoubt }));
await store.close();
