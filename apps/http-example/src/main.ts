/**
 * The HTTP example (`pnpm http-example --help`): `--role server` answers
 * HTTP (and serves the chat page) and starts runs without driving them;
 * `--role worker` (as many processes as you like) runs them. Both on one
 * SQLite file.
 */
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { type CommandLineSpec, type OptionSpecs, runCommand, wholeNumber } from "@durable-apps/shared/command-line";
import { type EventSink, startWorker } from "@durable/core";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { Chats } from "./chat.js";
import { greeting, greetingRunner, greetings } from "./greeting.js";
import { exampleServer } from "./server.js";

const FOLDER = join(tmpdir(), "durable-http-example");

const COMMAND = {
  command: "pnpm http-example",
  about:
    "a plain node:http server whose POST /runs starts a run on the fleet's greetings queue (4 at once, one per name) and answers 202 { runId } at once (an Idempotency-Key header " +
    "is the run id), whose GET /runs/:id answers its status and result, and whose POST /drain drives queued runs for 10 s; " +
    "and a chat page (GET /) on tool loops started on the fleet, whose streams a client follows and rejoins " +
    "(POST /chats, GET /chats/:id, GET /chats/:id/stream); workers in other processes run them, on one SQLite file.",
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
    "chat-lease-ms": {
      type: "string",
      default: "10000",
      value: "<ms>",
      about: "a worker's lease on a chat: another worker takes over a chat this long after its worker died",
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
  const leaseMs = wholeNumber("chat-lease-ms", values["chat-lease-ms"], 100, 3_600_000);
  const store = new SQLiteCheckpointStore(db);
  const runner = greetingRunner(store, outbox);
  const chats = new Chats(store);
  if (role === "worker") {
    // Says each time this worker takes a chat up: a start, or a takeover of a chat whose worker died.
    const tookUp: EventSink = (event) => {
      if (event.type === "run.recovered") console.log(`worker: took up chat ${event.runId} at step ${event.step}`);
    };
    const serve = [runner.served(greeting), chats.served(leaseMs, tookUp)];
    // Looks at least once a second while idle: a started run waits for a worker at most that long.
    startWorker({ serve, queues: [greetings], pollMs: 200, maxPollMs: 1_000 });
    console.log(`worker: running greeting runs and chats from ${db}`);
    return;
  }
  const server = exampleServer(runner, chats).listen(port, "127.0.0.1");
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
