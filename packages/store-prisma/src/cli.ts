#!/usr/bin/env node
/**
 * durable-prisma migrate <url> [--schema name] [--table-prefix prefix]
 * Applies the shipped migrations of @durable/store-prisma to a database.
 */
import { parseArgs } from "node:util";
import { PrismaCheckpointStore } from "./prisma-store.js";

const USAGE = "Usage: durable-prisma migrate <postgresql://… | file:…> [--schema name] [--table-prefix prefix]";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { schema: { type: "string" }, "table-prefix": { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const [command, url] = positionals;
  if (values.help === true) {
    console.log(USAGE);
    return 0;
  }
  if (command !== "migrate" || url === undefined) {
    console.error(USAGE);
    return 2;
  }
  const store = new PrismaCheckpointStore(url, {
    ...(values.schema === undefined ? {} : { schema: values.schema }),
    ...(values["table-prefix"] === undefined ? {} : { tablePrefix: values["table-prefix"] }),
  });
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
