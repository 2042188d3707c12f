/** Migrates one database from a process of its own; prints what it applied. */
import { PrismaCheckpointStore } from "../src/index.js";

const store = new PrismaCheckpointStore(process.argv[2]!);
console.log(`applied ${JSON.stringify(await store.migrate())}`);
await store.close();
