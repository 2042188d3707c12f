import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../src/index.js";

const CHILD = fileURLToPath(new URL("./two-workers-sigterm-child.ts", import.meta.url));

describe("SIGTERM to a process with one standing worker", () => {
  it("ends the process once the worker stopped: the run inside its tool finishes first (deadline 3 s)", {
    timeout: 15_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-sigterm-"));
    try {
      const db = join(dir, "runs.db");
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, "single"], {
        stdio: ["ignore", "pipe", "inherit"],
      });
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
