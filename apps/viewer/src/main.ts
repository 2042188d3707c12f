/**
 * The run viewer (`pnpm viewer --help` lists the options): the run console of
 * @durable/console with the demo's defaults. With no --store it shows the
 * demo's runs (its store, its key, its event log); it reads only, unless
 * started with --allow-actions.
 */
import { existsSync } from "node:fs";
import { startConsole } from "@durable/console";
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { runCommand, wholeNumber, type CommandLineSpec, type OptionSpecs } from "@durable-apps/shared/command-line";
import { DEFAULT_STORE, DEMO_FOLDER, eventLogFor, openStore } from "@durable-apps/shared/store-url";
import { viewerKey } from "./key.js";

const VIEWER_COMMAND = {
  command: "pnpm viewer",
  about:
    "the run console (@durable/console) over the demo's runs, or any store: runs of every status, each one's checkpoints with what each step changed, its calls marked ran, replayed, rerun or in doubt, and its events. " +
    "It reads the store (and the event log the workers wrote); with --allow-actions it records approval answers, decisions on calls in doubt, retries and cancellations. With no --store it shows the demo's runs (its store and its key).",
  options: {
    store: {
      type: "string",
      value: "<url>",
      defaultText: `the demo's store, ${DEFAULT_STORE}`,
      about:
        "the store: sqlite:<path>, redis://host:port or postgresql://user@host:port/database (the demo's prefixes)",
    },
    events: {
      type: "string",
      value: "<path>",
      defaultText: "beside a SQLite store (<path>.events.jsonl), else beside the demo's",
      about: "the JSON Lines file the workers' jsonlEventSink writes",
    },
    key: {
      type: "string",
      value: "<key>",
      defaultText: "$DURABLE_KEY; with --demo, the demo's key",
      about: "the key the workers seal with (at least 32 bytes)",
    },
    "key-file": { type: "string", value: "<path>", defaultText: "none", about: "a file that holds that key" },
    demo: {
      type: "boolean",
      default: false,
      defaultText: "on when no --store is given",
      about: "the demo's runs: its key and, unless --store, its store (e.g. after pnpm demo --store redis://…)",
    },
    "allow-actions": { type: "boolean", default: false, about: "serve the console's action forms and record them" },
    port: { type: "string", default: "4173", value: "<n>", about: "the port to serve on (0: any free one)" },
    host: { type: "string", default: "127.0.0.1", value: "<host>", about: "the address to serve on" },
  },
  environment: { DURABLE_KEY: "the key the workers seal with, when no --key or --key-file is given" },
  example: "pnpm viewer --store redis://127.0.0.1:6379 --events ./events.jsonl --key-file ./durable.key",
} as const satisfies CommandLineSpec<OptionSpecs>;

await runCommand(VIEWER_COMMAND, async (values) => {
  const port = wholeNumber("port", values.port, 0, 65535);
  const demo = values.demo || values.store === undefined;
  const storeUrl = values.store ?? DEFAULT_STORE;
  const key = viewerKey({ key: values.key, keyFile: values["key-file"], demo });
  if (storeUrl === DEFAULT_STORE && !existsSync(DEMO_FOLDER))
    throw new CommandLineError(
      `No demo runs yet (no ${DEMO_FOLDER}): run pnpm demo first (with the same TMPDIR), or give --store.`,
    );
  const store = await openStore(storeUrl);
  const events = values.events ?? eventLogFor(storeUrl);
  const viewer = await startConsole({
    store,
    checkpointKey: key,
    label: storeUrl,
    port,
    host: values.host,
    events,
    allowActions: values["allow-actions"],
  }).catch(async (error: unknown) => {
    await store.close();
    if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    throw new CommandLineError(`The port is taken: pick another with --port N. (${(error as Error).message})`);
  });
  console.log(`viewer: ${viewer.url}  (programs: ${viewer.api}; store ${storeUrl}, events ${events}; Ctrl-C stops it)`);
  const stop = async () => {
    await viewer.close();
    await store.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
});
