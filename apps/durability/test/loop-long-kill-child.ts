/**
 * A worker for the long-loop crash test: takes the tool loop `runId` of
 * `steps` model calls on the SQLite file `db` (starting it, or recovering it
 * when it is stored) and prints its result as JSON. Each step's tool fetches
 * a ~2 KB page and appends `<call id>` to `effects` when it really runs, then
 * marks `tool.inside`, where DURABLE_FAULT_POINT may kill it. A call left in
 * doubt is decided as an operator would, from what the effects file says
 * happened: its page when the tool ran, a rerun when it did not.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { RecoveryNeedsDecision, ToolRegistry } from "@durable/core";
import { CheckpointNotFound } from "@durable/core/store";
import { faultPoint } from "@durable/core/internal";
import { DurableRun, Sealer } from "@durable/core/runner";
import { readToolLoop, recoverToolLoop, runToolLoop, type LoopModel } from "@durable/loop";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const [db, effects, runId, steps] = process.argv.slice(2) as [string, string, string, string];
const KEY = "long-loop-test-key-0123456789abcdef";
const PAGE = "a page of the long run ".repeat(90);

/** Asks for the next page until it read `steps` of them. */
const model: LoopModel = {
  async reply(messages) {
    const made = messages.filter((message) => message.role === "assistant").length;
    if (made >= Number(steps)) return { text: "read them all", toolCalls: [] };
    return { text: "", toolCalls: [{ id: `page-${made}`, name: "fetch_page", args: { n: made } }] };
  },
};
const page = (n: number) => `${n}: ${PAGE}`;
const registry = new ToolRegistry().tool("fetch_page", (args: { n: number }, ctx) => {
  appendFileSync(effects, `${ctx.callId}\n`);
  faultPoint("tool.inside");
  return page(args.n);
});
const store = new SQLiteCheckpointStore(db);
const options = { checkpoints: store, checkpointKey: KEY, name: "long-loop" };

/** The decisions an operator makes from the effects file: the page of a call that ran, a rerun of one that did not. */
function decisions(error: RecoveryNeedsDecision) {
  const ran = new Set(existsSync(effects) ? readFileSync(effects, "utf8").split("\n") : []);
  return Object.fromEntries(
    error.calls.map((call) => [
      call.callId,
      ran.has(call.callId) ? { result: page((call.args as { n: number }).n) } : ("rerun" as const),
    ]),
  );
}

const stored = await DurableRun.latest(store, Sealer.withKeys(KEY), runId).catch((error: unknown) => {
  if (error instanceof CheckpointNotFound) return undefined;
  throw error;
});
const recover = (decide?: ReturnType<typeof decisions>) =>
  recoverToolLoop(model, registry, runId, { ...options, takeOver: true, ...(decide === undefined ? {} : { decide }) });
// A worker killed after the run's last save (its `done`) left nothing to go on with: the run as it ended.
const result =
  stored?.status === "done"
    ? await readToolLoop(runId, options)
    : stored === undefined
      ? await runToolLoop(model, registry, [{ role: "user", content: "read every page" }], {
          ...options,
          runId,
          // A model call cut off by a crash counts against maxSteps (it was made): room for the test's kills.
          maxSteps: Number(steps) + 10,
        })
      : await recover().catch((error: unknown) => {
          if (error instanceof RecoveryNeedsDecision) return recover(decisions(error));
          throw error;
        });
console.log(JSON.stringify({ status: result.status, messages: result.status === "done" ? result.messages.length : 0 }));
await store.close();
