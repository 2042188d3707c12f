import type { SegmentCounts } from "./contract.js";
import { InvalidInput } from "../base/errors.js";
import { isObject } from "../base/option-checks.js";

/**
 * What an anchor knows of a run: the highest step stored, the highest
 * segment, and how many call records each segment holds at least. Each is a
 * lower bound of what the store must hold, since the runner raises the
 * anchor only after the store acknowledged the write.
 */
export interface AnchoredHead {
  readonly step: number;
  readonly segment: number;
  /** Records stored per segment, by segment number (missing segments: 0). */
  readonly calls: SegmentCounts;
}

/**
 * A second place that keeps each run's head (another database, a Redis, a
 * KMS-backed counter, the application's own table), out of reach of whoever
 * can write the checkpoint store. The runner raises it after each commit to
 * the store and reads it on every recovery: a store that holds less than the
 * anchor knows (the newest checkpoints deleted with their records, the tail
 * records of a finished call deleted, the whole run deleted or rolled back)
 * is `CheckpointStoreCorrupt`. See docs/security.md.
 */
export interface RunAnchor {
  /**
   * Raises the run's head to at least `head`, field by field, atomically:
   * the step and segment become the higher of the kept and the given, each
   * segment's count likewise. It never lowers anything, so a late write of a
   * fenced worker, or two racing writes, leave the highest of each. Resolves
   * once the head is durable.
   */
  advance(runId: string, head: AnchoredHead): Promise<void>;
  /** The run's head, or undefined when the anchor knows nothing of it. */
  read(runId: string): Promise<AnchoredHead | undefined>;
  /** Forgets the run: its rows were deleted through the store's API (`delete`). */
  forget(runId: string): Promise<void>;
}

/** The join of two heads: the higher step and segment, and each segment's higher count. */
export function mergeHeads(kept: AnchoredHead | undefined, given: AnchoredHead): AnchoredHead {
  if (kept === undefined) return given;
  const length = Math.max(kept.calls.length, given.calls.length);
  return {
    step: Math.max(kept.step, given.step),
    segment: Math.max(kept.segment, given.segment),
    calls: Array.from({ length }, (_, s) => Math.max(kept.calls[s] ?? 0, given.calls[s] ?? 0)),
  };
}

/** True for a head as an anchor keeps it: whole numbers ≥ 0. */
export function isAnchoredHead(value: unknown): value is AnchoredHead {
  if (!isObject(value)) return false;
  const { step, segment, calls } = value;
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  return count(step) && count(segment) && Array.isArray(calls) && calls.every(count);
}

/** Checks what a runner is given as `anchor`: an object with `advance`, `read` and `forget`. */
export function checkAnchor(where: string, anchor: unknown): asserts anchor is RunAnchor | undefined {
  if (anchor === undefined) return;
  const ok = isObject(anchor) && ["advance", "read", "forget"].every((m) => typeof anchor[m] === "function");
  if (!ok)
    throw new InvalidInput(
      `${where}: anchor must be a RunAnchor (an object with advance, read and forget), for example new SQLiteRunAnchor(path).`,
    );
}

/**
 * An anchor in this process's memory: for tests, and for a process that
 * checks a store another party can write while it runs. It forgets
 * everything when the process ends, so it cannot catch a rollback across a
 * restart; use an anchor in a database for that.
 */
export class MemoryRunAnchor implements RunAnchor {
  readonly #heads = new Map<string, AnchoredHead>();

  async advance(runId: string, head: AnchoredHead): Promise<void> {
    this.#heads.set(runId, mergeHeads(this.#heads.get(runId), head));
  }

  async read(runId: string): Promise<AnchoredHead | undefined> {
    return this.#heads.get(runId);
  }

  async forget(runId: string): Promise<void> {
    this.#heads.delete(runId);
  }
}
