import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../src/index.js";

const CHILD = fileURLToPath(new URL("./two-workers-sigterm-child.ts", import.meta.url));

describe("SIGTERM to a process with two standing workers", () => {
  it("ends the process only once both workers stopped: the busy one finishes (or releases) its run first", {
    timeout: 15_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-sigterm-"));
    try {
      const db = join(dir, "runs.db");
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, db], { stdio: ["ignore", "pipe", "inherit"] });
      const lines: string[] = [];
      const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
        child.on("exit", (code, signal) => resolve(signal ?? code)),
      );
      await new Promise<void>((resolve) =>
        createInterface({ input: child.stdout }).on("line", (line) => {
          lines.push(line);
          if (line === "inside") resolve();
        }),
      );
      child.kill("SIGTERM");
      const ended = await exited;
      const store = new SQLiteCheckpointStore(db);
      try {
        const latest = await store.latest("r");
        const lease = await store.leaseOf("r");
        // w2's deadline (3 s) outlasts its tool (800 ms): its run should be done, or at least released.
        // The idle worker w1 stopped at once, found no other SIGTERM listener (w2's `once` was spent by the same
        // signal), and killed the process with w2 still inside the tool: the run keeps w2's live lease for 5 s.
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
  });
});
