/**
 * The HTTP example (`pnpm http-example --help`): `--role server` answers
 * HTTP and starts runs without driving them; `--role worker` (as many
 * processes as you like) runs them. Both on one SQLite file.
 */
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { type CommandLineSpec, type OptionSpecs, runCommand, wholeNumber } from "@durable-apps/shared/command-line";
import { startWorker } from "@durable/core";
import { greeting, greetingRunner, greetings } from "./greeting.js";
import { greetingServer } from "./server.js";

const FOLDER = join(tmpdir(), "durable-http-example");

const COMMAND = {
  command: "pnpm http-example",
  about:
    "a plain node:http server whose POST /runs starts a run on the fleet's greetings queue (4 at once, one per name) and answers 202 { runId } at once (an Idempotency-Key header " +
    "is the run id), whose GET /runs/:id answers its status and result, and whose POST /drain drives queued runs for 10 s; " +
    "workers in other processes run them, on one SQLite file.",
  options: {
    role: { type: "string", default: "server", value: "<server|worker>", about: "answer HTTP, or run the runs" },
    port: { type: "string", default: "3000", value: "<n>", about: "the server's port; 0 takes a free one" },
    db: {
      type: "string",
      default: join(FOLDER, "runs.db"),
      value: "<path>",
      about: "the SQLite file every process shares",
    },
    outbox: {
      type: "string",
      default: join(FOLDER, "outbox.jsonl"),
      value: "<path>",
      about: "where the tool writes each greeting it sends, one JSON line",
    },
  },
  environment: { DURABLE_KEY: "the key every process seals checkpoints with (default: a fixed example key)" },
  example: "pnpm http-example --role worker & pnpm http-example --port 3000",
} as const satisfies CommandLineSpec<OptionSpecs>;

await runCommand(COMMAND, async (values) => {
  const { role, db, outbox } = values;
  if (role !== "server" && role !== "worker")
    throw new CommandLineError(`--role takes server or worker, not ${JSON.stringify(role)}.`);
  const port = wholeNumber("port", values.port, 0, 65_535);
  for (const path of [db, outbox]) mkdirSync(dirname(path), { recursive: true });
  const runner = greetingRunner(db, outbox);
  if (role === "worker") {
    // Looks at least once a second while idle: a started run waits for a worker at most that long.
    startWorker({ serve: [runner.served(greeting)], queues: [greetings], pollMs: 200, maxPollMs: 1_000 });
    console.log(`worker: running greeting runs from ${db}`);
    return;
  }
  const server = greetingServer(runner).listen(port, "127.0.0.1");
  await new Promise((resolve, reject) => {
    server.once("listening", resolve).once("error", (error) => {
      reject(
        new CommandLineError(`The server cannot listen on port ${port} (${error.message}): give another with --port.`),
      );
    });
  });
  const address = server.address();
  console.log(`listening on http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : port}`);
});
