/**
 * The soak's ledger: one file every worker process appends to, one line per
 * thing it did, with the process's name and the time (every process reads
 * the same clock). The name is `<slot>.<life>`, never reused in a soak (pids
 * are: they wrap around within a long one on a busy machine). The verdict reads it instead of the store: when each tool ran and
 * by whom, which runs each worker claimed, which calls it found in doubt.
 *
 *   S <exec> <who> <ms> <run> <call> <tool> <key> [<version>]
 *                                                   a tool execution began (<version>: of the flow the
 *                                                   process serves, in the versions soak)
 *   E <exec> <who> <ms>                             and ended
 *   C <who> <ms> <run>                              a worker claimed a run (started it, or recovered it)
 *   D <who> <ms> <run> <call>:<tool>,…              a claim sent at <ms> found calls in doubt and stopped for a decision
 *   X <who> <ms> <run> <call>:<tool>,…              a claim sent at <ms> found calls in doubt and runs them again
 *   R <who> <ms> <run> <call>                       a recovery replayed a finished call from the log
 *   L <who> <ms> <run>                              the store refused a claim: another worker's lease was live
 *   T <who> <ms> <run>                              a claim with takeOver (the workers never make one)
 *   G <who> <ms>                                    a stopping worker gave up the runs it still had
 *   K <who> <sent> <answered> <run> <kind> <outcome> a write that may set the run's lease (<kind>: a save, which
 *                                                   claims or renews it, or a renewal) was sent, and <outcome>:
 *                                                   accepted, refused, or failed unanswered by <answered>
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";

/** One execution of a tool: `end` is missing when its worker died inside it. */
export interface Execution {
  readonly worker: string;
  readonly start: number;
  end?: number;
  readonly runId: string;
  readonly callId: string;
  readonly tool: string;
  readonly key: string;
  /** The version of the flow its process serves (the versions soak), as the process wrote it. */
  readonly version?: number;
}

/** A run's calls a claim found in doubt, and when it was sent. */
interface InDoubtReport {
  readonly worker: string;
  readonly at: number;
  readonly runId: string;
  readonly calls: readonly { readonly callId: string; readonly tool: string }[];
}

/** Something a worker did to a run at a time: claimed it, or began one of its tools. */
export interface Touch {
  readonly worker: string;
  readonly at: number;
  /** A claim that found calls of the run in doubt. */
  readonly inDoubt?: true;
}

/** A write that may set a run's lease: the store set it, if at all, between `sent` and `answered`. */
export interface LeaseWrite {
  readonly worker: string;
  readonly sent: number;
  readonly answered: number;
  /** A save claims the lease, or renews its own once a third of it has passed; a renewal always renews it. */
  readonly kind: "save" | "renew";
  readonly outcome: LeaseWriteOutcome;
}

type LeaseWriteOutcome = "accepted" | "refused" | "unanswered";

/** The ledger as the verdict reads it. */
export interface LedgerEntries {
  readonly executions: readonly Execution[];
  /** Per run: its claims (those that found calls in doubt marked) and tool executions, in the order they were written. */
  readonly touches: ReadonlyMap<string, readonly Touch[]>;
  /** Per run: its claims (a start, a recovery), by whom and when each was sent. */
  readonly claims: ReadonlyMap<string, readonly Touch[]>;
  /** Per run: the writes that may have set its lease. */
  readonly leaseWrites: ReadonlyMap<string, readonly LeaseWrite[]>;
  /** Claims that found calls in doubt and stopped for a decision. */
  readonly inDoubt: readonly InDoubtReport[];
  /** Claims that found calls in doubt and ran them again (idempotent tools, or with `rerunInDoubt`). */
  readonly reruns: readonly InDoubtReport[];
  /** `<run> <call>` of each call a recovery replayed. */
  readonly replayed: ReadonlySet<string>;
  /** When each worker that gave up runs on stopping did so. */
  readonly gaveUp: ReadonlyMap<string, number>;
  readonly leaseHeld: number;
  readonly takeOvers: number;
}

/** What one worker process writes to the ledger. */
export class LedgerWriter {
  readonly #path: string;
  readonly #worker: string;
  readonly #version: string;
  #executions = 0;

  /** `worker`: this process's name in the soak; `version`: of the flow it serves, written with each tool execution. */
  constructor(path: string, worker: string, version?: number) {
    this.#path = path;
    this.#worker = worker;
    this.#version = version === undefined ? "" : ` ${version}`;
  }

  /** Writes the start of a tool's execution; the returned function writes its end. */
  execution(runId: string, callId: string, tool: string, key: string): () => void {
    const exec = `${this.#worker}.${++this.#executions}`;
    this.#write(`S ${exec} ${this.#worker} ${Date.now()} ${runId} ${callId} ${tool} ${key}${this.#version}`);
    return () => this.#write(`E ${exec} ${this.#worker} ${Date.now()}`);
  }

  claimed(runId: string): void {
    this.#event("C", runId);
  }

  /**
   * A claim found calls in doubt: `rerun` false when it stopped for a decision, true when it runs them
   * again. `claimedAt`: when the claim was sent, so a claim made after it is never taken for one before it.
   */
  inDoubt(runId: string, claimedAt: number, calls: readonly { callId: string; tool: string }[], rerun: boolean): void {
    const list = calls.map((call) => `${call.callId}:${call.tool}`).join(",");
    this.#write(`${rerun ? "X" : "D"} ${this.#worker} ${claimedAt} ${runId} ${list}`);
  }

  replayed(runId: string, callId: string): void {
    this.#event("R", runId, callId);
  }

  leaseHeld(runId: string): void {
    this.#event("L", runId);
  }

  tookOver(runId: string): void {
    this.#event("T", runId);
  }

  /** A write that may set the run's lease was sent at `sent` and answered (or failed) by `answered`. */
  leaseWritten(runId: string, write: Omit<LeaseWrite, "worker">): void {
    this.#write(`K ${this.#worker} ${write.sent} ${write.answered} ${runId} ${write.kind} ${write.outcome}`);
  }

  gaveUp(): void {
    this.#write(`G ${this.#worker} ${Date.now()}`);
  }

  #event(kind: string, runId: string, more?: string): void {
    this.#write(`${kind} ${this.#worker} ${Date.now()} ${runId}${more === undefined ? "" : ` ${more}`}`);
  }

  #write(line: string): void {
    // One short append per line: lines of concurrent processes never interleave.
    appendFileSync(this.#path, `${line}\n`);
  }
}

/** Reads every line the workers wrote; a line cut short by a kill (the last one of a process) is skipped. */
export function readLedger(path: string): LedgerEntries {
  const executions = new Map<string, Execution>();
  const touches = new Map<string, Touch[]>();
  const claims = new Map<string, Touch[]>();
  const leaseWrites = new Map<string, LeaseWrite[]>();
  const inDoubt: InDoubtReport[] = [];
  const reruns: InDoubtReport[] = [];
  const replayed = new Set<string>();
  const gaveUp = new Map<string, number>();
  let leaseHeld = 0;
  let takeOvers = 0;
  const touch = (runId: string, worker: string, at: number) => push(touches, runId, { worker, at });
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  for (const line of text.split("\n")) {
    const [kind, ...fields] = line.split(" ");
    if (kind === "S" && (fields.length === 7 || fields.length === 8)) {
      const [exec, worker, at, runId, callId, tool, key, version] = fields as [
        string,
        string,
        string,
        string,
        string,
        string,
        string,
        string | undefined,
      ];
      const execution = { worker, start: Number(at), runId, callId, tool, key };
      executions.set(exec, version === undefined ? execution : { ...execution, version: Number(version) });
      touch(runId, worker, Number(at));
    } else if (kind === "E" && fields.length === 3) {
      const execution = executions.get(fields[0] as string);
      if (execution !== undefined) execution.end = Number(fields[2]);
    } else if (kind === "K" && fields.length === 6) {
      const [worker, sent, answered, runId, write, outcome] = fields as [
        string,
        string,
        string,
        string,
        string,
        string,
      ];
      push(leaseWrites, runId, {
        worker,
        sent: Number(sent),
        answered: Number(answered),
        kind: write as LeaseWrite["kind"],
        outcome: outcome as LeaseWriteOutcome,
      });
    } else if (kind === "G" && fields.length === 2) {
      gaveUp.set(fields[0] as string, Number(fields[1]));
    } else if (fields.length >= 3) {
      const [worker, at, runId, more = ""] = fields as [string, string, string, string | undefined];
      if (kind === "C") {
        touch(runId, worker, Number(at));
        push(claims, runId, { worker, at: Number(at) });
      }
      if (kind === "D" || kind === "X") {
        (kind === "D" ? inDoubt : reruns).push({ worker, at: Number(at), runId, calls: parseCalls(more) });
        push(claims, runId, { worker, at: Number(at) });
        push(touches, runId, { worker, at: Number(at), inDoubt: true });
      }
      if (kind === "R") replayed.add(`${runId} ${more}`);
      if (kind === "L") leaseHeld += 1;
      if (kind === "T") takeOvers += 1;
    }
  }
  return {
    executions: [...executions.values()],
    touches,
    claims,
    leaseWrites,
    inDoubt,
    reruns,
    replayed,
    gaveUp,
    leaseHeld,
    takeOvers,
  };
}

export function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key) ?? [];
  list.push(value);
  map.set(key, list);
}

function parseCalls(text: string): { callId: string; tool: string }[] {
  return text.split(",").map((pair) => {
    // A call id holds colons itself; the tool is after the last one.
    const at = pair.lastIndexOf(":");
    return { callId: pair.slice(0, at), tool: pair.slice(at + 1) };
  });
}
