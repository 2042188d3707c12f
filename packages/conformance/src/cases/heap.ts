import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: (() => void) | undefined;

/**
 * The bytes of JavaScript heap still reachable, after full garbage
 * collections: what the code holds, not what it happened to leave behind.
 * Needs no `--expose-gc`; the flag is set for a fresh context that exposes it.
 */
export function retainedHeap(): number {
  if (gc === undefined) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
