/**
 * A worker of the child-runs crash test, on the SQLite file `db`: it serves
 * the parent flow `report` (three child runs of the workflow `research`, one
 * per source, awaited together, then `publish`) or the child workflow
 * (`fetch`, a 3 s sleep, `summarize`: the test kills its worker while all three sleep), as `serves` says. With `start` it
 * first starts the parent run `runId`. It prints "serving" once it polls, "asleep <run id>"
 * each time a run is saved asleep or waiting, and "done" once the parent is
 * done. Each tool appends to `effects` when it really runs: the verdict reads
 * that file, not the store.
 */
import { appendFileSync } from "node:fs";
import { Executor, startWorker, ToolRegistry } from "@durable/core";
import { Flow, FlowRunner, workflow } from "@durable/flow";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { z } from "zod";

const [mode, db, effects, runId, serves] = process.argv.slice(2) as [
  "start" | "serve",
  string,
  string,
  string,
  "report" | "research",
];
const KEY = "children-crash-test-key-0123456789abcdef";
const POLL_MS = 100;

const effect = (tool: string) => (args: unknown) => {
  appendFileSync(effects, `${JSON.stringify({ tool, args, pid: process.pid, at: Date.now() })}\n`);
  return tool === "fetch" ? `text of ${(args as { source: string }).source}` : tool;
};
const registry = new ToolRegistry()
  .tool("fetch", effect("fetch"))
  .tool("summarize", effect("summarize"))
  .tool("publish", effect("publish"));

const research = workflow("research", { input: z.object({ source: z.string() }) }, async (ctx, { source }) => {
  const text = await ctx.call<string>("fetch", { source });
  await ctx.sleep(3_000);
  await ctx.call("summarize", { source });
  return { source, words: text.length };
});
const report = new Flow("report", { state: z.object({ sources: z.array(z.string()), words: z.number().default(0) }) })
  .node("research", async ({ sources }, ctx) => {
    const found = await Promise.all(sources.map((source) => ctx.startChild(research, { source })));
    const words = found.reduce((sum, one) => sum + one.words, 0);
    await ctx.call("publish", { words });
    return { words };
  })
  .end("research");

const store = new SQLiteCheckpointStore(db);
const runner = new FlowRunner(new Executor(registry), {
  checkpoints: store,
  checkpointKey: KEY,
  lease: { ms: 1_000 },
  events: (event) => {
    if (event.type === "run.asleep") console.log(`asleep ${event.runId}`);
  },
});
if (mode === "start") await runner.run(report, { sources: ["alpha", "beta", "gamma"] }, { runId });
const worker = startWorker({
  serve: [serves === "report" ? runner.served(report) : runner.served(research)],
  pollMs: POLL_MS,
  maxPollMs: POLL_MS,
  stopOnSignals: false,
});
console.log(`serving ${Date.now()}`);
for (;;) {
  if ((await store.latest(runId)).status === "done") break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await worker.stop();
console.log("done");
await store.close();
