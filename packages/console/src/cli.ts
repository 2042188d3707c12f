#!/usr/bin/env node
/**
 * `durable-console --store <url> --key-file <file>`: serves the run console
 * on 127.0.0.1 and prints its address, with the token every request needs.
 * Bad usage is one line on stderr and exit code 2.
 */
import { parseArgs } from "node:util";
import { CheckpointNotFound, type CheckpointStore, DurableError } from "@durable/core";
import { ConsoleError, firstLine } from "./console-error.js";
import { checkpointKeysFrom, encryptionKeysFrom } from "./key-files.js";
import { openStoreUrl, redacted } from "./open-store.js";
import { startConsole } from "./server.js";

const HELP = `durable-console: a web page over a @durable store. It lists runs of every status (search, filters,
pages, live refresh) and shows each one's checkpoints with what each step changed, its calls (arguments,
results, attempts, idempotency keys; ran, replayed, rerun or in doubt) and a loop's messages. With
--allow-actions it records approval answers, decisions on calls in doubt, retries and cancellations, which the
workers serving the runs act on. It serves on 127.0.0.1 only, and every request needs the token it prints.

Usage: durable-console --store <url> --key-file <file> [options]

Options:
  --store <url>        the store: sqlite:<path>, redis://host:port or postgresql://user@host:port/database
  --key-file <file>    the workers' key (one per line for rotation: the first signs, all verify), or their
                       Ed25519 key in PEM (a public key reads only: no actions), then the HMAC keys
                       of runs sealed before a switch to Ed25519; or DURABLE_KEY
  --encryption-key-file <file>
                       the workers' encryption key, when their runs are encrypted (one per line); or
                       DURABLE_ENCRYPTION_KEY
  --prefix <prefix>    the store's table prefix (SQLite, PostgreSQL; default durable_) or key prefix (Redis; default durable)
  --events <file>      the workers' JSON Lines event log: adds step times, durations and events to run pages
  --allow-actions      serve the action forms and record them (default: read only)
  --as <name>          who acts, recorded with each action (default: <user>@<host>)
  --host <address>     the address to serve on (default 127.0.0.1)
  --port <n>           the port to serve on (default 4174; 0: any free one)
  -h, --help           print this help and exit

Environment:
  DURABLE_KEY            the workers' key, when no --key-file is given
  DURABLE_ENCRYPTION_KEY the workers' encryption key, when no --encryption-key-file is given
  DURABLE_CONSOLE_TOKEN  the token requests need (at least 16 characters; default: a new random one)

Example:
  durable-console --store sqlite:./runs.db --key-file ./durable.key --events ./events.jsonl`;

const OPTIONS = {
  store: { type: "string" },
  "key-file": { type: "string" },
  "encryption-key-file": { type: "string" },
  prefix: { type: "string" },
  events: { type: "string" },
  "allow-actions": { type: "boolean", default: false },
  as: { type: "string" },
  host: { type: "string", default: "127.0.0.1" },
  port: { type: "string", default: "4174" },
  help: { type: "boolean", short: "h", default: false },
} as const;

async function main(argv: readonly string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false });
  } catch (error) {
    throw new ConsoleError(`${(error as Error).message.split("\n")[0]} (see durable-console --help).`);
  }
  const values = parsed.values;
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  if (values.store === undefined)
    throw new ConsoleError("Give the store: --store sqlite:<path>, redis://… or postgresql://… (see --help).");
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535)
    throw new ConsoleError(`--port takes a whole number from 0 to 65535, not ${values.port}.`);
  const keys = checkpointKeysFrom(values["key-file"]);
  const encryptionKey = encryptionKeysFrom(values["encryption-key-file"]);
  const label = redacted(values.store);
  const store = await openStoreUrl(values.store, { prefix: values.prefix }).catch((error: unknown) => {
    throw error instanceof ConsoleError
      ? error
      : new ConsoleError(`--store ${label} cannot be opened: ${firstLine(error)}`);
  });
  await answers(store, label);
  const token = process.env["DURABLE_CONSOLE_TOKEN"];
  const running = await startConsole({
    store,
    checkpointKey: keys,
    ...(encryptionKey === undefined ? {} : { encryptionKey }),
    label,
    host: values.host,
    port,
    allowActions: values["allow-actions"],
    ...(token === undefined ? {} : { token }),
    ...(values.as === undefined ? {} : { by: values.as }),
    ...(values.events === undefined ? {} : { events: values.events }),
  }).catch(async (error: unknown) => {
    await store.close().catch(() => undefined);
    if ((error as { code?: string }).code === "EADDRINUSE")
      throw new ConsoleError(`Port ${port} is taken: pick another with --port N.`);
    if (error instanceof DurableError) throw new ConsoleError(error.message);
    throw error;
  });
  const check = running.keyCheck;
  if (check !== undefined && check.runs > 0 && check.unverified === check.runs)
    console.error(
      `durable-console: wrong key? none of the ${check.runs} newest runs verifies with it: give the key the workers seal with (--key-file or DURABLE_KEY).`,
    );
  else if (check !== undefined && check.unverified > 0)
    console.error(
      `durable-console: ${check.unverified} of the ${check.runs} newest runs do not verify with this key: their pages say why.`,
    );
  console.log(`durable-console: ${running.url}`);
  console.log(`  programs: ${running.api} with Authorization: Bearer <the token>`);
  console.log(`  store ${label}${values["allow-actions"] ? "; actions on" : "; read only"}; Ctrl-C stops it`);
  const stop = async () => {
    await running.close();
    await store.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/** Checks the store answers before serving: a server that is down is one line, not a page of errors later. */
async function answers(store: CheckpointStore, label: string): Promise<void> {
  try {
    await store.latest("durable-console-probe");
  } catch (error) {
    if (error instanceof CheckpointNotFound) return;
    await store.close().catch(() => undefined);
    throw new ConsoleError(`--store ${label} does not answer (${firstLine(error)}).`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (!(error instanceof ConsoleError)) throw error;
  console.error(error.message);
  process.exit(2);
});
