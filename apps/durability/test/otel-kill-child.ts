/**
 * The first worker of the trace-across-a-SIGKILL test, on the SQLite file
 * `db`: the OpenTelemetry SDK registered, each span written to `spans` as it
 * ends (its memory dies with it), a worker serving the order flow whose
 * `charge` hangs; prints "serving" once it polls. The test kills it inside `charge`.
 */
import { startWorker } from "@durable/core";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { orders, runner } from "./otel-kill-flow.js";
import { registerOtel } from "@durable/test-utils/otel";

const [db, effects, spans] = process.argv.slice(2);
if (db === undefined || effects === undefined || spans === undefined) {
  process.stderr.write("usage: otel-kill-child.ts <db> <effects> <spans>\n");
  process.exit(2);
}
registerOtel(spans);
const store = new SQLiteCheckpointStore(db, { synchronous: "normal" });
startWorker({ serve: [runner(store, effects, true).served(orders)], pollMs: 100, maxPollMs: 100, logger: false });
console.log("serving");
