import type { ConformanceInitializer } from "../harness/initializer.js";
import type { CheckpointStore } from "@durable/core/store";
import type { Harness } from "../harness/harness.js";

/** The groups of the kit, in the order they run. */
export type GroupName =
  | "save"
  | "read"
  | "call-log"
  | "batch"
  | "lease"
  | "timers"
  | "events"
  | "stream"
  | "queue"
  | "inspect"
  | "fork"
  | "integrity"
  | "tamper"
  | "anchor"
  | "isolation"
  | "ttl"
  | "scale"
  | "race"
  | "crash";

/** One named promise of the protocol, checked against a store. */
export interface ConformanceCase {
  readonly name: string;
  /** Runs the check; it throws (an assertion error) when the store breaks the promise. */
  run(h: Harness): Promise<void>;
  /** For a case that needs a capability the store may lack: the reason to skip it, or undefined to run it. */
  skipUnless?(init: ConformanceInitializer): string | undefined;
  /** For a case that needs what the opened store or its oracle may lack: the reason to skip it, or undefined. */
  skipFor?(h: Harness): string | undefined;
  /** Milliseconds; default 30 s. */
  readonly timeout?: number;
}

/** A group of cases guarding one part of the protocol. */
export interface ConformanceGroup {
  readonly name: GroupName;
  /** One line: what passing this group proves. */
  readonly proves: string;
  /** The reason to skip the whole group for a store that lacks what it needs, or undefined to run it. */
  skipUnless?(init: ConformanceInitializer): string | undefined;
  /** The reason to skip the whole group for the store a case opened (an optional method it lacks), or undefined. */
  skipFor?(store: CheckpointStore): string | undefined;
  readonly cases: readonly ConformanceCase[];
}

/** Skips unless the store declares `connect`. */
export function needsConnect(init: ConformanceInitializer): string | undefined {
  return init.capabilities?.connect === undefined
    ? "the store declares no `connect` capability (a second client on the same data)"
    : undefined;
}
