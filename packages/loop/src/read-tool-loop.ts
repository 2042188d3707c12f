import type { RunStatus } from "@durable/core/store";
import { CheckpointConflict } from "@durable/core";
import { DurableRun, readEnvelope, resumeIdentity, runStorage } from "@durable/core/runner";
import { checkLoopOptions } from "./check-args.js";
import { readLoopData, type StopReason } from "./loop-data.js";
import { stepResults, type LoopStepResult } from "./loop-result.js";
import type { Message } from "./message.js";
import { addUsage, type ModelUsage } from "./usage.js";
import type { LoopStoreOptions } from "./loop-options.js";

/** A tool loop as its latest checkpoint holds it, read without claiming it. */
export interface LoopSnapshot {
  readonly runId: string;
  readonly step: number;
  /** `paused` is a loop waiting for approval answers, or a conversation waiting for the user (`awaitingUser`). */
  readonly status: RunStatus;
  readonly awaitingUser: boolean;
  readonly messages: readonly Message[];
  readonly steps: readonly LoopStepResult[];
  readonly usage: ModelUsage;
  readonly turn: number;
  readonly stopped?: StopReason;
  /** Why it failed (a failed loop). */
  readonly error?: string;
  /**
   * On a loop that streams (`stream`), how many parts of its stream the saved
   * history covers: follow from here (`followToolLoop`'s `from`) for what
   * came after, with no gap and nothing twice.
   */
  readonly streamed?: number;
}

/**
 * Reads a tool loop's latest checkpoint, verified, without claiming it or
 * asking the model anything: what a UI shows after a reconnect (the saved
 * history; a reply cut off by a crash is not in it, and runs again). The
 * caller's `ctx` is checked as a recovery checks it. `CheckpointNotFound` for
 * an unknown run, `CheckpointConflict` for a run of another kind or name.
 */
export async function readToolLoop(runId: string, options: LoopStoreOptions): Promise<LoopSnapshot> {
  checkLoopOptions("readToolLoop", options);
  // Read as a worker reads: decrypted, verified, and checked against the anchor when one is given.
  const { store, sealer } = runStorage("readToolLoop", options);
  const latest = await DurableRun.latest(store, sealer, runId);
  resumeIdentity(runId, latest.identity, options.ctx);
  const name = options.name ?? "tool-loop";
  if (latest.kind !== "loop" || latest.name !== name)
    throw new CheckpointConflict(
      runId,
      `the run belongs to ${latest.kind} ${JSON.stringify(latest.name)}, not loop ${JSON.stringify(name)}.`,
    );
  const envelope = readEnvelope(runId, latest.data);
  const data = readLoopData(runId, envelope.program);
  const steps = stepResults(data);
  return {
    runId,
    step: latest.step,
    status: latest.status,
    awaitingUser: latest.status === "paused" && envelope.pending.length === 0,
    messages: data.messages,
    steps,
    usage: addUsage(steps.map((step) => step.usage)),
    turn: data.turn,
    ...(data.stopped === undefined ? {} : { stopped: data.stopped }),
    ...(envelope.error === undefined ? {} : { error: envelope.error }),
    ...(latest.streamed === undefined ? {} : { streamed: latest.streamed }),
  };
}
