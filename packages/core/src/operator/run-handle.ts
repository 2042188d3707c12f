import { setTimeout as sleep } from "node:timers/promises";
import { InvalidInput, ResultTimedOut, RunFailed } from "../base/errors.js";
import type { JsonObject } from "../base/json.js";
import { assertRunId } from "../base/names.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import { DurableRun } from "../run/durable-run.js";
import { readEnvelope } from "../run/envelope.js";
import { workerId } from "../run/lease.js";
import { runStorage, STORAGE_OPTIONS, type StorageOptions } from "../run/storage.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import { cancelRun } from "./actions.js";
import type { OperatorOptions } from "./options.js";

/**
 * Where a run stands, as its user sees it (read from its latest checkpoint):
 * `queued` is a run saved by a start that no worker claimed yet; `asleep` one
 * that sleeps until `until` or waits for an event (`waitsFor`, at most until
 * `until`); `paused` one that waits for answers to its approvals or for its
 * next message; `failed` gives its `error`.
 */
export interface RunHandleStatus {
  readonly status: "running" | "queued" | "asleep" | "paused" | "done" | "failed";
  readonly step: number;
  /** When an asleep run wakes (ms since the epoch, by the clock of the worker that put it to sleep). */
  readonly until?: number;
  readonly waitsFor?: readonly string[];
  readonly error?: string;
}

/** Where a handle reads its run: the workers' storage options (their key, and their `encryptionKey` when they use one). */
export interface RunHandleOptions extends StorageOptions {
  /** Who cancels, recorded with a cancel (default: this process's worker id). */
  readonly by?: string;
}

/** How a done run's program data (as its runner stored it) is read as the handle's result. */
export type ReadOutput<R> = (
  program: JsonObject,
  at: { readonly runId: string; readonly step: number },
) => R | Promise<R>;

const RUN_HANDLE_OPTIONS: OptionTable<RunHandleOptions> = { ...STORAGE_OPTIONS, by: "string" };

/** `result()` reads the run again after 50 ms, then twice as long each time, up to 1 s: no hot loop on the store. */
const FIRST_WAIT_MS = 50;
const MAX_WAIT_MS = 1_000;

/**
 * One run, seen from anywhere with the store and the key (a web server that
 * started it, another process): where it stands, its result once done, and
 * its cancel. It reads the run's latest checkpoint, verified; it drives nothing.
 */
export class RunHandle<R = JsonObject> {
  readonly runId: string;
  readonly #store: CheckpointStore;
  readonly #sealer: Sealer;
  readonly #output: ReadOutput<R>;
  readonly #cancelAs: OperatorOptions;

  /** `output` reads a done run's program data as its result (a flow runner's: the flow's final state). */
  constructor(options: RunHandleOptions, runId: string, output: ReadOutput<R>) {
    checkOptions("RunHandle", options, RUN_HANDLE_OPTIONS);
    this.runId = assertRunId(runId);
    ({ store: this.#store, sealer: this.#sealer } = runStorage("RunHandle", options));
    this.#output = output;
    // A store that never leaves this process needs no key (`sealerFor`): the runner's options are a cancel's as they are.
    this.#cancelAs = { ...options, by: options.by ?? workerId() } as OperatorOptions;
  }

  /** Where the run stands now: one read of its latest checkpoint (and of its lease at step 0). `CheckpointNotFound` for an unknown run. */
  async status(): Promise<RunHandleStatus> {
    return (await this.#read()).status;
  }

  /**
   * Waits until the run is done and gives its result; reads the run again
   * after 50 ms, doubling up to 1 s. A failed (or cancelled) run is
   * `RunFailed` with its error text; `ResultTimedOut` once `timeoutMs`
   * passed (the run goes on). Default: waits as long as it takes.
   */
  async result(options: { readonly timeoutMs?: number } = {}): Promise<R> {
    checkOptions("RunHandle.result", options, { timeoutMs: true });
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && timeoutMs >= 0))
      throw new InvalidInput(`RunHandle.result: timeoutMs must be a whole number ≥ 0, not ${String(timeoutMs)}.`);
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
      const { status, program } = await this.#read();
      if (status.status === "done") return this.#output(program, { runId: this.runId, step: status.step });
      if (status.status === "failed") throw new RunFailed(this.runId, status.error ?? "");
      const left = deadline - Date.now();
      if (left <= 0) throw new ResultTimedOut(this.runId, timeoutMs ?? 0, status.status);
      await sleep(Math.min(wait, left));
    }
  }

  /**
   * Cancels the run (`cancelRun`, recorded with the handle's `by`): saved
   * `failed` with `Cancelled: <reason>`, even while a worker drives it (it is
   * fenced). Returns the step it was saved as.
   */
  cancel(reason: string): Promise<number> {
    return cancelRun(this.runId, reason, this.#cancelAs);
  }

  async #read(): Promise<{ status: RunHandleStatus; program: JsonObject }> {
    const latest = await DurableRun.latest(this.#store, this.#sealer, this.runId);
    const envelope = readEnvelope(this.runId, latest.data);
    const { step } = latest;
    const at = (status: RunHandleStatus) => ({ status, program: envelope.program });
    if (latest.status === "failed") return at({ status: "failed", step, error: envelope.error ?? "" });
    if (latest.status !== "running") return at({ status: latest.status, step });
    const { asleep, waitsFor } = envelope;
    if (asleep !== undefined)
      return at({ status: "asleep", step, until: asleep, ...(waitsFor === undefined ? {} : { waitsFor }) });
    // Step 0 with no live lease: a start saved it for the fleet (`enqueue`) and no worker claimed it yet.
    return at({ status: step === 0 && !(await this.#leased()) ? "queued" : "running", step });
  }

  async #leased(): Promise<boolean> {
    const lease = await this.#store.leaseOf(this.runId);
    return lease !== undefined && lease.expiresAt > lease.now;
  }
}

/**
 * A handle on run `runId` from its id alone, anywhere the store and the key
 * are: its result is the run's program data as its runner stored it (a
 * flow's `{ state, … }`; `FlowRunner.handle(flow, runId)` gives the flow's state).
 */
export function runHandle(options: RunHandleOptions, runId: string): RunHandle {
  return new RunHandle(options, runId, (program) => program);
}
