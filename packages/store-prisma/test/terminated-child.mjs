// A process saving runs through the Prisma store on PostgreSQL while the test ends its connections
// (pg_terminate_backend): it must live through it. Prints how many saves succeeded and failed.
// It says "ready" once migrated, then saves for `ms`. Plain JavaScript on the built package, so the child starts without a TypeScript loader.
import { PrismaCheckpointStore } from "../dist/index.js";

const [url, ms] = process.argv.slice(2);
const store = new PrismaCheckpointStore(url, { operationTimeoutMs: 2000 });
await store.migrate();
console.log("ready");
const row = (status = "running") => ({ status, segment: 0, name: "f", kind: "flow", sealed: "d1.-.{}" });
let saved = 0;
let failed = 0;
const until = Date.now() + Number(ms);
await Promise.all(
  Array.from({ length: 8 }, async (_, lane) => {
    for (let n = 0; Date.now() < until; n++) {
      const runId = `r-${lane}-${n}`;
      for (let step = 0; step < 4; step++) {
        try {
          await store.save(runId, step, row(), { owner: "w", ms: 30_000 });
          saved++;
        } catch (error) {
          if (error?.code !== "STORE_UNAVAILABLE" && error?.code !== "CHECKPOINT_CONFLICT") throw error;
          failed++;
          break;
        }
      }
    }
  }),
);
console.log(JSON.stringify({ saved, failed }));
await store.close();
