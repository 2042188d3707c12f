import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const CHILD = fileURLToPath(new URL("./worker-sigterm-child.ts", import.meta.url));

describe("SIGTERM to a process with standing workers", () => {
  // With two, the idle one stops at once: the process must still wait for the busy one (a handler that killed
  // the process once its own worker stopped left the run inside its tool with a live lease).
  it.for([
    { workers: "one standing worker", args: ["single"] },
    { workers: "two standing workers, one of them idle", args: [] },
  ])(
    "$workers: the process ends once every worker stopped, the run inside its tool finished first (deadline 3 s)",
    {
      timeout: 15_000,
    },
    async ({ args }) => {
      const dir = mkdtempSync(join(tmpdir(), "durable-sigterm-"));
      try {
        const db = join(dir, "runs.db");
        const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, ...args], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
          child.on("exit", (code, signal) => resolve(signal ?? code)),
        );
        await new Promise<void>((resolve) =>
          createInterface({ input: child.stdout }).on("line", (line) => {
            if (line === "inside") resolve();
          }),
        );
        child.kill("SIGTERM");
        const ended = await exited;
        const store = new SQLiteCheckpointStore(db);
        try {
          const latest = await store.latest("r");
          const lease = await store.leaseOf("r");
          // The busy worker's deadline (3 s) outlasts its tool (800 ms): its run is done and its lease released.
          expect({ ended, status: latest.status, leaseOwner: lease?.owner }).toEqual({
            ended: "SIGTERM",
            status: "done",
            leaseOwner: undefined,
          });
        } finally {
          await store.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
