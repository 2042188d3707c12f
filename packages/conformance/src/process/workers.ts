import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { CheckpointStore } from "@durable/core";
import { assertFreshBuild } from "../harness/fresh-build.js";
import type { ConformanceInitializer } from "../harness/initializer.js";
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
  assertFreshOnce(multi.opener);
  return new Child(WORKER, [multi.opener, multi.handle(store), effects, ...args], {
    env,
    typescript: isTypeScript(multi.opener),
  });
}

const fresh = new Set<string>();

/**
 * Refuses, before the first worker with this opener starts, when the worker or
 * the opener would load a built file older than its source: a store's tests
 * run its source, so a worker on an older build would test other code. Workers
 * stay on plain JavaScript: a TypeScript loader in each of the hundreds of
 * workers makes the crash group take about three times as long.
 */
function assertFreshOnce(opener: string): void {
  if (fresh.has(opener)) return;
  assertFreshBuild(WORKER, opener);
  fresh.add(opener);
}

/** The environment with no fault point armed, for the processes that must not die. */
export function withoutFaultPoint(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env["DURABLE_FAULT_POINT"];
  return env;
}
