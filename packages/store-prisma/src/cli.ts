#!/usr/bin/env node
/** `durable-prisma migrate <url>`: applies the shipped migrations of @durable/store-prisma to a database. */
import { parseArgs } from "node:util";
import { InvalidInput } from "@durable/core/store";
import { PrismaCheckpointStore } from "./prisma-store.js";

const HELP = `Usage: durable-prisma migrate <url> [options]

Creates or updates the tables of @durable/store-prisma in a database: applies
the migrations it ships that are not applied yet. Safe from many processes at
once; prints what it applied.

  <url>                    postgresql://… (or postgres://…) or file:<path> for SQLite

Options:
  --schema <name>          PostgreSQL only: the schema of the tables (default: public)
  --table-prefix <prefix>  prefix of the tables (default: durable_)
  -h, --help               show this help

Example:
  durable-prisma migrate postgresql://app@db:5432/app --schema durable`;

const USAGE = "Usage: durable-prisma migrate <url> [--schema name] [--table-prefix prefix]; see --help.";

/** Bad usage: one line on stderr and exit code 2. */
class Usage extends Error {}

function parse(): { url: string; schema: string | undefined; tablePrefix: string | undefined } | "help" {
  const { values, positionals } = readArgs();
  if (values.help === true) return "help";
  const [command, url, ...rest] = positionals;
  if (command !== "migrate")
    throw new Usage(command === undefined ? USAGE : `Unknown command ${JSON.stringify(command)}. ${USAGE}`);
  if (url === undefined) throw new Usage(`migrate needs the database URL. ${USAGE}`);
  if (rest.length > 0) throw new Usage(`Unexpected argument ${JSON.stringify(rest[0])}. ${USAGE}`);
  return { url, schema: values.schema, tablePrefix: values["table-prefix"] };
}

/** The command line as parseArgs reads it; its complaint becomes a `Usage` line. */
function readArgs() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        schema: { type: "string" },
        "table-prefix": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    // The first sentence of parseArgs's message, e.g. "Unknown option '--x'.".
    const [first] = (error as Error).message.split(/(?<=\.) /);
    throw new Usage(`${first?.endsWith(".") ? first : `${first}.`} ${USAGE}`);
  }
}

async function main(): Promise<number> {
  let store: PrismaCheckpointStore;
  try {
    const args = parse();
    if (args === "help") {
      console.log(HELP);
      return 0;
    }
    store = new PrismaCheckpointStore(args.url, {
      ...(args.schema === undefined ? {} : { schema: args.schema }),
      ...(args.tablePrefix === undefined ? {} : { tablePrefix: args.tablePrefix }),
    });
  } catch (error) {
    if (!(error instanceof Usage || error instanceof InvalidInput)) throw error;
    console.error(error.message);
    return 2;
  }
  try {
    const applied = await store.migrate();
    console.log(applied.length === 0 ? "The schema is up to date." : `Applied: ${applied.join(", ")}`);
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  } finally {
    await store.close();
  }
}

process.exitCode = await main();
