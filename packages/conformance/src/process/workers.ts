import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { CheckpointStore } from "@durable/core";
import type { ConformanceInitializer } from "../initializer.js";
import { Child, isTypeScript } from "./child.js";

const built = new URL("./worker.js", import.meta.url);
const WORKER = existsSync(fileURLToPath(built)) ? built : new URL("./worker.ts", import.meta.url);

/** Skips unless the store declares `multiProcess`. */
export function needsMultiProcess(init: ConformanceInitializer): string | undefined {
  return init.capabilities?.multiProcess === undefined
    ? "the store declares no `multiProcess` capability (an opener module child processes open it with)"
    : undefined;
}

/** A worker process on the same data as `store`, writing tool executions to `effects`. */
export function spawnWorker(
  init: ConformanceInitializer,
  store: CheckpointStore,
  effects: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Child {
  const multi = init.capabilities?.multiProcess;
  if (multi === undefined) throw new Error("this test needs the `multiProcess` capability");
  return new Child(WORKER, [multi.opener, multi.handle(store), effects, ...args], { env, typescript: isTypeScript(multi.opener) });
}

/** The environment with no fault point armed, for the processes that must not die. */
export function withoutFaultPoint(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env["DURABLE_FAULT_POINT"];
  return env;
}
