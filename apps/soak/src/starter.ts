import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { StarterConfig } from "./queue-starter.js";

const STARTER = fileURLToPath(new URL("./queue-starter.ts", import.meta.url));

/** What starts the soak's runs when the workers do not (the queue soak's process, the versions soak's starter). */
export interface Starter {
  /** Throws when the starter failed: the soak cannot go on without its runs. */
  check(): void;
  /** Stops it, whatever it was doing. */
  stop(): Promise<void>;
}

/** The queue soak's starter process: it starts every run on the queue, then exits. */
export function startStarter(config: StarterConfig): Starter {
  let stderr = "";
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", STARTER, JSON.stringify(config)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    check() {
      if (child.exitCode !== null && child.exitCode !== 0)
        throw new Error(`the starter failed (exit ${child.exitCode}): ${stderr}`);
    },
    async stop() {
      child.kill("SIGKILL");
    },
  };
}
