/**
 * pnpm viewer [--store <url>] [--events <path>] [--port N]
 * A local web page over a store and the JSON Lines event log its workers write:
 * the runs, each one's steps, calls (replayed, rerun, in doubt) and events.
 * Defaults: the demo's store and event log, port 4173. It reads; it changes nothing.
 */
import { parseArgs } from "node:util";
import { Sealer } from "@durable/core";
import { CommandLineError } from "@durable-apps/demo/command-line-error";
import { DEFAULT_STORE, DEMO_KEY, eventLogFor, openStore } from "@durable-apps/demo/store-url";
import { startViewer } from "./server.js";

try {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((arg) => arg !== "--"),
    options: {
      store: { type: "string", default: DEFAULT_STORE },
      events: { type: "string" },
      port: { type: "string", default: "4173" },
      host: { type: "string", default: "127.0.0.1" },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CommandLineError(`--port takes a port number, not ${values.port}.`);
  const store = await openStore(values.store);
  const eventLog = values.events ?? eventLogFor(values.store);
  const viewer = await startViewer({ store, sealer: Sealer.withKeys(DEMO_KEY), eventLog, label: values.store, port, host: values.host });
  console.log(`viewer: ${viewer.url}  (store ${values.store}, events ${eventLog}; Ctrl-C stops it)`);
  const stop = async () => {
    await viewer.close();
    await store.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
} catch (error) {
  const usage = error instanceof CommandLineError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS") === true;
  const listen = (error as { code?: string }).code === "EADDRINUSE";
  if (!usage && !listen) throw error;
  console.error(listen ? `The port is taken: pick another with --port N. (${(error as Error).message})` : (error as Error).message);
  process.exit(2);
}
