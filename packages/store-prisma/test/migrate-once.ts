/** Migrates one database from a process of its own; prints what it applied. */
import { PrismaCheckpointStore } from "../src/index.js";

// Four of these wait in turn on the migration lock: on a busy machine that can take longer than an operation's 5 s.
const url = process.argv[2]!;
const store = new PrismaCheckpointStore(url, url.startsWith("file:") ? {} : { operationTimeoutMs: 60_000 });
console.log(`applied ${JSON.stringify(await store.migrate())}`);
await store.close();
