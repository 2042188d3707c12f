import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { SoakVersion } from "./tickets.js";
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

/** A worker process the soak started: its name in the soak, the version of the flow it serves, when it was spawned. */
export interface Life {
  readonly worker: string;
  readonly version: SoakVersion | undefined;
  readonly startedAt: number;
  /** When it said it takes runs ("ready"). */
  readyAt?: number;
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
  /** Per version served (the versions soak): the most runs of another version one worker had left (`WorkerStatus.otherVersion`). */
  readonly otherVersion: Map<SoakVersion, number>;
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
    otherVersion: new Map(),
    over: false,
  };
}

/**
 * One worker slot: a process, started again in the slot after each kill or restart, until it prints "finished";
 * at the version it serves now (a rolling deploy moves it to another: `redeploy`).
 */
export class WorkerSlot {
  #config: Omit<WorkerConfig, "worker">;
  readonly #env: NodeJS.ProcessEnv;
  readonly #progress: Progress;
  readonly #deaths: Death[];
  readonly #lives: Life[];
  #process: ChildProcess;
  /** How many processes the slot started, and the running one. */
  #started = 0;
  #life: Life | undefined;
  /** The running process's name in the soak: `<slot>.<life>`. */
  #name = "";
  #stderr = "";
  finished = false;
  /** Set while the process is ended (SIGKILL, or a SIGTERM while it drains) and replaced: nothing else ends it meanwhile. */
  ending = false;
  /** Runs this process finished since it started: only one that made progress is killed again. */
  ranSinceStart = 0;

  /** `deaths` and `lives`: where the slot notes each process it ends and each one it starts. */
  constructor(
    config: Omit<WorkerConfig, "worker">,
    env: NodeJS.ProcessEnv,
    progress: Progress,
    deaths: Death[],
    lives: Life[],
  ) {
    this.#config = config;
    this.#env = env;
    this.#progress = progress;
    this.#deaths = deaths;
    this.#lives = lives;
    this.#process = this.#start();
  }

  /** Whether the slot's running process said it takes runs. */
  get ready(): boolean {
    return this.#life?.readyAt !== undefined;
  }

  #start(): ChildProcess {
    this.#name = `${this.#config.slot}.${++this.#started}`;
    const life: Life = { worker: this.#name, version: this.#config.version, startedAt: Date.now() };
    this.#life = life;
    this.#lives.push(life);
    const config: WorkerConfig = { ...this.#config, worker: this.#name };
    const child = spawn(process.execPath, ["--import", "tsx", WORKER, JSON.stringify(config)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: this.#env,
    });
    this.#stderr = "";
    this.ranSinceStart = 0;
    child.stderr.on("data", (chunk: Buffer) => (this.#stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line === "ready") life.readyAt = Date.now();
      this.#heard(line, life.version);
    });
    return child;
  }

  /** A line of a process of the slot that serves `version`. */
  #heard(line: string, version: SoakVersion | undefined): void {
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
    if (what === "other" && version !== undefined)
      progress.otherVersion.set(version, Math.max(progress.otherVersion.get(version) ?? 0, Number(runId)));
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
    await this.#end("SIGTERM");
  }

  /** A deploy of another version to the slot: a rolling restart whose new process serves `version`. */
  async redeploy(version: SoakVersion): Promise<void> {
    this.#config = { ...this.#config, version };
    await this.#end("SIGTERM");
  }

  async #end(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
    this.ending = true;
    try {
      await this.#replace(signal);
    } finally {
      this.ending = false;
    }
  }

  async #replace(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
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
