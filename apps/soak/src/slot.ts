import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { WorkerConfig } from "./worker.js";

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** A worker process the soak ended: SIGKILLed, or stopped with SIGTERM (it drained, then gave up what was left). */
export interface Death {
  /** Its name in the soak (`<slot>.<life>`), as it wrote it to the ledger. */
  readonly worker: string;
  readonly signal: "SIGKILL" | "SIGTERM";
  /** When the soak sent the signal. */
  readonly signalledAt: number;
  /** When the soak saw the process exit: it did nothing after. */
  readonly diedAt: number;
}

/** What the workers reported so far, summed over all of them. */
export interface Progress {
  /** Runs a worker started or claimed and no worker finished yet. */
  readonly inFlight: Set<string>;
  /** Runs finished, by whichever worker. */
  ran: number;
  /** Runs a worker took over from another worker (its lease ran out or was released). */
  recovered: number;
  /** Store operations that failed with `StoreUnavailable` (each retried). */
  unavailable: number;
  /** The longest store operation reported, in ms (operations over 50 ms are reported). */
  maxOpMs: number;
  /** The same since whoever watches last set it to 0 (the fault soak, at each fault). */
  windowMaxOpMs: number;
  /** `unavailable` since whoever watches last set it to 0. */
  windowUnavailable: number;
  /** Workers that printed "finished". */
  finished: number;
  /** Set once the soak stops waiting for the workers: a disturbance then ends. */
  over: boolean;
}

export function newProgress(): Progress {
  return {
    inFlight: new Set<string>(),
    ran: 0,
    recovered: 0,
    unavailable: 0,
    maxOpMs: 0,
    windowMaxOpMs: 0,
    windowUnavailable: 0,
    finished: 0,
    over: false,
  };
}

/** One worker slot: a process, started again in the slot after each kill or restart, until it prints "finished". */
export class WorkerSlot {
  readonly #config: Omit<WorkerConfig, "worker">;
  readonly #env: NodeJS.ProcessEnv;
  readonly #progress: Progress;
  readonly #deaths: Death[];
  #process: ChildProcess;
  #lives = 0;
  /** The running process's name in the soak: `<slot>.<life>`. */
  #name = "";
  #stderr = "";
  finished = false;
  /** Set while a SIGTERM drains the process: it is not killed again meanwhile. */
  draining = false;
  /** Runs this process finished since it started: only one that made progress is killed again. */
  ranSinceStart = 0;

  constructor(config: Omit<WorkerConfig, "worker">, env: NodeJS.ProcessEnv, progress: Progress, deaths: Death[]) {
    this.#config = config;
    this.#env = env;
    this.#progress = progress;
    this.#deaths = deaths;
    this.#process = this.#start();
  }

  #start(): ChildProcess {
    this.#name = `${this.#config.slot}.${++this.#lives}`;
    const config: WorkerConfig = { ...this.#config, worker: this.#name };
    const child = spawn(process.execPath, ["--import", "tsx", WORKER, JSON.stringify(config)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: this.#env,
    });
    this.#stderr = "";
    this.ranSinceStart = 0;
    child.stderr.on("data", (chunk: Buffer) => (this.#stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => this.#heard(line));
    return child;
  }

  #heard(line: string): void {
    const progress = this.#progress;
    const [what, runId = ""] = line.split(" ");
    if (what === "started" || what === "claimed" || what === "recovered" || what === "decided")
      progress.inFlight.add(runId);
    if (what === "recovered") progress.recovered += 1;
    if (what === "done") {
      progress.inFlight.delete(runId);
      progress.ran += 1;
      this.ranSinceStart += 1;
    }
    if (what === "unavailable") {
      progress.unavailable += 1;
      progress.windowUnavailable += 1;
    }
    if (what === "op") {
      const ms = Number(runId);
      progress.maxOpMs = Math.max(progress.maxOpMs, ms);
      progress.windowMaxOpMs = Math.max(progress.windowMaxOpMs, ms);
    }
    if (what === "finished") {
      this.finished = true;
      progress.finished += 1;
    }
  }

  /** Throws when the worker died on its own: that is a failure, not a kill. */
  check(): void {
    const { exitCode } = this.#process;
    if (exitCode !== null && exitCode !== 0) throw new Error(`a worker failed (exit ${exitCode}): ${this.#stderr}`);
  }

  /** Ends the process for good (the soak is over or failed). */
  stop(): void {
    this.finished = true;
    this.#process.kill("SIGKILL");
  }

  /** SIGKILL, then a new process in the slot. */
  async kill(): Promise<void> {
    await this.#end("SIGKILL");
  }

  /** A rolling restart: SIGTERM, wait while the process drains and exits, then a new one in the slot. */
  async restart(): Promise<void> {
    this.draining = true;
    try {
      await this.#end("SIGTERM");
    } finally {
      this.draining = false;
    }
  }

  async #end(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
    const child = this.#process;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const signalledAt = Date.now();
    child.kill(signal);
    if (child.exitCode === null && child.signalCode === null) await exited;
    this.#deaths.push({ worker: this.#name, signal, signalledAt, diedAt: Date.now() });
    // A process that failed is reported by check(), not replaced.
    if (!this.finished && (child.exitCode === null || child.exitCode === 0)) this.#process = this.#start();
  }
}
