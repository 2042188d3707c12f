/**
 * One worker process of the queued-runs measure: worker <config JSON>
 * (`QueuedWorkerConfig`). It serves the bench's queue, its tickets flow, on
 * the store the config names (or, for the DBOS side, a DBOS queue on the
 * PostgreSQL system database it names), prints "ready", then for each run
 * "claimed <run id> <ms>" when a worker took it and "done <run id> <ms>"
 * when it ended (ms since the epoch). Stopped with SIGKILL by the measure.
 */
import { startWorker } from "@durable/core";
import { type ORDER, runner, tickets, TICKET_CALLS } from "../workload.js";
import { openQueuedStore, QUEUE, type QueuedWorkerConfig } from "./target.js";

const config = JSON.parse(process.argv[2] ?? "{}") as QueuedWorkerConfig;
const say = (what: string, runId: string): void => void console.log(`${what} ${runId} ${Date.now()}`);

if (config.kind === "dbos") await serveDbos(config.url);
else {
  const store = await openQueuedStore(config);
  const fleet = runner(store, {
    events: (event) => {
      if (event.type === "run.recovered") say("claimed", event.runId);
      else if (event.type === "run.done") say("done", event.runId);
    },
  });
  startWorker({
    serve: [fleet.served(tickets)],
    queues: [QUEUE],
    concurrency: config.concurrency,
    pollMs: config.pollMs,
    maxPollMs: config.pollMs,
    stopOnSignals: false,
  });
  console.log("ready");
}

/** The same flow as a DBOS workflow on a DBOS queue polled as often, `concurrency` at once in this process. */
async function serveDbos(systemDatabaseUrl: string): Promise<void> {
  const { DBOS } = await import("@dbos-inc/dbos-sdk");
  const [hold, pay, send] = TICKET_CALLS;
  DBOS.registerWorkflow(
    async (order: typeof ORDER, runId: string) => {
      say("claimed", runId);
      await DBOS.runStep(() => hold(order), { name: "hold" });
      await DBOS.runStep(() => pay(order), { name: "pay" });
      await DBOS.runStep(() => send(order), { name: "send" });
      say("done", runId);
    },
    { name: "tickets" },
  );
  DBOS.setConfig({ name: "durable-bench-queued", systemDatabaseUrl, logLevel: "warn" });
  await DBOS.launch();
  await DBOS.registerQueue(QUEUE.name, {
    workerConcurrency: config.concurrency,
    minPollingIntervalMs: config.pollMs,
  });
  console.log("ready");
}
