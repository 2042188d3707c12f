/**
 * The soak (`pnpm soak --help` lists the options): worker processes serve one
 * flow with `startWorker` and start runs of it, while every 0.5–2 s one is
 * SIGKILLed or, every fourth time, restarted with SIGTERM; then every run must
 * be done, none lost, no live lease claimed, no non-idempotent call run twice
 * unless a claim found it in doubt, and calls in doubt only where a worker
 * died inside a tool. `--faults`: server faults on the soak's own Redis and
 * PostgreSQL instead of kills (src/faults.ts); `--cluster`: a master killed
 * and slots resharded on the soak's own Redis Cluster (src/cluster-faults.ts);
 * `--versions`: a rolling deploy of a second version of the flow under the
 * kills (src/versions.ts).
 */
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { runCommand, wholeNumber, type CommandLineSpec, type OptionSpecs } from "@durable-apps/shared/command-line";
import { clusterFaultSoak } from "./cluster-faults.js";
import { FAULT_DEFAULTS, type FaultSoakReport, faultSoak, faultTable } from "./faults.js";
import { SOAK_DEFAULTS, soak, soakSummary } from "./soak.js";
import { QUEUE_SOAK_DEFAULTS } from "./queue.js";
import { soakStoreKind } from "./store.js";
import { vacuousSoak } from "./verdict.js";
import { vacuousDeploy } from "./version-verdict.js";
import { versionSoak } from "./versions.js";

/** The queue soak's pause between kills: a kill holds the dead worker's slots until their leases run out. */
const QUEUE_KILL_EVERY_MS = [2_000, 6_000] as const;

const [REDIS, POSTGRESQL] = ["redis://127.0.0.1:6379", "postgresql://postgres@127.0.0.1:5432/test"];

const SOAK_COMMAND = {
  command: "pnpm soak",
  about:
    "worker processes serve one flow (startWorker, short leases) and start runs of it, while every 0.5–2 s one is SIGKILLed or, every fourth time, " +
    "restarted with SIGTERM (it drains, gives up what is left, a new one takes its slot); then, from the tools' ledger and the kill times: every run done, none lost, " +
    "no two workers in one run's tools at once unless the first was dead or had given the run up, no claim with takeOver, no non-idempotent call run twice " +
    "unless a claim found it in doubt, calls in doubt only after a worker died, and kills inside tools, restarts, runs taken over, runs in doubt and calls replayed all seen. Exit 1 on any violation.",
  options: {
    store: {
      type: "string",
      multiple: true,
      value: "<url>",
      defaultText: `$REDIS_URL (else ${REDIS}), then $DATABASE_URL (else ${POSTGRESQL})`,
      about:
        "a store to soak, redis://…, redis-cluster://host:port,host:port… or postgresql://… (give it again for more); the soak makes its own prefix or database there and drops it",
    },
    runs: {
      type: "string",
      default: String(SOAK_DEFAULTS.runs),
      value: "<n>",
      about: "how many runs the workers take, per store",
    },
    workers: {
      type: "string",
      default: String(SOAK_DEFAULTS.workers),
      value: "<n>",
      about: "how many worker processes",
    },
    lease: {
      type: "string",
      default: String(SOAK_DEFAULTS.leaseMs),
      value: "<ms>",
      about:
        "how long a worker's lease on a run lasts from its last renewal: a killed worker's runs are taken over this long after",
    },
    // Long soaks (--runs 2000 on PostgreSQL takes about 2 minutes here) get room; CI uses the default size and deadline.
    seconds: {
      type: "string",
      default: "900",
      value: "<n>",
      about: "the deadline per store: the soak fails if the workers have not finished by then",
    },
    faults: {
      type: "boolean",
      about:
        "server faults instead of kills: starts its own Redis (AOF appendfsync always) and PostgreSQL (initdb, pg_ctl) on free ports in temp dirs, workers connect through a TCP proxy, " +
        "and a schedule restarts Redis, restarts PostgreSQL (-m fast, -m immediate), freezes each server and cuts every connection, again until the runs are done; prints a table per fault",
    },
    cluster: {
      type: "boolean",
      about:
        "the cluster fault soak: starts its own Redis Cluster (3 masters with a replica each, AOF appendfsync always on every node) on free ports in a temp dir; " +
        "while the workers take the runs, SIGKILLs the master holding most of them (its replica takes over, then it rejoins as a replica) and reshards slots holding runs to another master " +
        "(redis-cli --cluster reshard), again until the runs are done; prints a table per fault",
    },
    queue: {
      type: "boolean",
      about:
        `the queue soak: a fifth process starts the runs on one queue (concurrency ${QUEUE_SOAK_DEFAULTS.concurrency}, one run per customer at a time, ${QUEUE_SOAK_DEFAULTS.customers} customers) and the workers serve the queue while they are killed and restarted; ` +
        "the verdict adds, from the tools' ledger, the most runs inside a tool at once and the most of one customer",
    },
    versions: {
      type: "boolean",
      about:
        "the versions soak, a rolling deploy under the kills: every worker serves version 1 of the flow, and the soak starts the runs a backlog ahead of them; " +
        "once half are started (on version 1), half the workers are restarted one at a time, 2 s apart, with SIGTERM, serving version 2 only (a node added), and every run after starts on version 2; " +
        "the verdict adds, from the tools' ledger, that every tool call, claim and save of a run came from a process of its version, that the added node ran in every run of version 2 and in none of version 1, " +
        "and that runs of version 1 finished after the first worker of version 2 started",
    },
    freeze: {
      type: "string",
      default: String(FAULT_DEFAULTS.freezeMs / 1000),
      value: "<s>",
      about: "with --faults: how long each freeze (SIGSTOP…SIGCONT) lasts",
    },
  },
  environment: {
    REDIS_URL: "the Redis of the default stores",
    DATABASE_URL: "the PostgreSQL of the default stores",
    DURABLE_KEY: "the key the workers seal with (default: a fixed soak key)",
  },
  example:
    "pnpm soak --runs 2000 --store redis://127.0.0.1:6379   (or: pnpm soak --faults --runs 2000, pnpm soak --versions)",
} as const satisfies CommandLineSpec<OptionSpecs>;

await runCommand(SOAK_COMMAND, async (values) => {
  if (values.cluster === true) {
    if (values.store !== undefined || values.faults === true || values.queue === true || values.versions === true)
      throw new CommandLineError(
        "--cluster starts its own Redis Cluster: it takes no --store, --faults, --queue or --versions.",
      );
    return soakCluster(
      wholeNumber("runs", values.runs),
      wholeNumber("workers", values.workers),
      wholeNumber("seconds", values.seconds),
    );
  }
  if (values.faults === true) {
    if (values.store !== undefined || values.queue === true || values.versions === true)
      throw new CommandLineError(
        "--faults starts its own Redis and PostgreSQL: it takes no --store, --queue or --versions.",
      );
    return soakUnderFaults(
      wholeNumber("runs", values.runs),
      wholeNumber("workers", values.workers),
      wholeNumber("seconds", values.seconds),
      wholeNumber("freeze", values.freeze),
    );
  }
  const stores = values.store ?? [process.env["REDIS_URL"] ?? REDIS, process.env["DATABASE_URL"] ?? POSTGRESQL];
  for (const store of stores) soakStoreKind(store);
  const runs = wholeNumber("runs", values.runs);
  const workers = wholeNumber("workers", values.workers);
  const deadlineSeconds = wholeNumber("seconds", values.seconds);
  const leaseMs = wholeNumber("lease", values.lease, 100);
  const versions = values.versions === true ? versionSoak(workers, runs) : undefined;
  if (versions !== undefined && values.queue === true)
    throw new CommandLineError("--versions and --queue are two soaks: give one of them.");
  if (versions !== undefined && versions.deployed === 0)
    throw new CommandLineError("--versions deploys version 2 to half the workers: give it --workers 2 or more.");
  let failed = false;
  for (const store of stores) {
    const queue = values.queue === true;
    const [killMin, killMax] = queue ? QUEUE_KILL_EVERY_MS : SOAK_DEFAULTS.killEveryMs;
    const deploy =
      versions === undefined
        ? ""
        : `; halfway, version 2 deployed to ${versions.deployed} of them, ${versions.pauseMs / 1000} s apart (${versions.backlog} runs started ahead of the workers)`;
    console.log(
      `soak on ${store}: ${runs} runs${queue ? " on one queue" : ""}, ${workers} workers, ${leaseMs} ms leases, every ${killMin / 1000}–${killMax / 1000} s a SIGKILL or (every ${SOAK_DEFAULTS.restartEvery}th time) a SIGTERM restart${deploy}`,
    );
    const report = await soak({
      ...SOAK_DEFAULTS,
      store,
      runs,
      workers,
      deadlineSeconds,
      leaseMs,
      // Queued runs wait their turn 5 at a time: shorter tools keep a soak of thousands within minutes.
      ...(queue ? { queue: QUEUE_SOAK_DEFAULTS, toolMs: 20, saveDelayMs: 0, killEveryMs: QUEUE_KILL_EVERY_MS } : {}),
      ...(versions === undefined ? {} : { versions }),
      log: (line) => console.log(`  ${line}`),
    });
    for (const line of soakSummary(report)) console.log(`  ${line}`);
    for (const violation of report.violations.slice(0, 20)) console.log(`  VIOLATION ${violation}`);
    const vacuous = vacuousSoak(report) ?? (report.versions === undefined ? undefined : vacuousDeploy(report.versions));
    if (vacuous !== undefined) console.log(`  FAILED ${vacuous}`);
    failed ||= report.violations.length > 0 || vacuous !== undefined;
  }
  process.exitCode = failed ? 1 : 0;
});

async function soakUnderFaults(
  runs: number,
  workers: number,
  deadlineSeconds: number,
  freezeSeconds: number,
): Promise<void> {
  console.log(
    `fault soak: ${runs} runs, ${workers} workers, on its own Redis and PostgreSQL; freezes of ${freezeSeconds} s`,
  );
  let failed = false;
  const printReport = (result: FaultSoakReport): void => {
    failed ||= !printFaultReport(result);
  };
  await faultSoak({
    ...FAULT_DEFAULTS,
    runs,
    workers,
    deadlineSeconds,
    freezeMs: freezeSeconds * 1000,
    log: (line) => console.log(`  ${line}`),
    onReport: printReport,
  });
  process.exitCode = failed ? 1 : 0;
}

/** Prints a fault soak's report; false when it found a violation. */
function printFaultReport({ report, rows, violations }: FaultSoakReport): boolean {
  console.log(
    `\n${report.store}: ${report.runs} runs done in ${report.seconds.toFixed(1)} s; ${report.unavailable} StoreUnavailable met and retried; longest operation ${Math.round(report.maxOpMs)} ms; ` +
      `${report.inDoubtRuns} runs had calls in doubt, ${report.rerunCalls} non-idempotent calls reran after being reported; ${violations.length} violations`,
  );
  for (const line of faultTable(rows)) console.log(`  ${line}`);
  for (const violation of violations.slice(0, 20)) console.log(`  VIOLATION ${violation}`);
  return violations.length === 0;
}

async function soakCluster(runs: number, workers: number, deadlineSeconds: number): Promise<void> {
  console.log(`cluster fault soak: ${runs} runs, ${workers} workers, on its own Redis Cluster (3 masters, 3 replicas)`);
  const result = await clusterFaultSoak({
    ...FAULT_DEFAULTS,
    runs,
    workers,
    deadlineSeconds,
    log: (line) => console.log(`  ${line}`),
  });
  process.exitCode = printFaultReport(result) ? 0 : 1;
}
