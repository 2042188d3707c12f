/**
 * The bench (`pnpm bench --help` lists the options): what durability costs,
 * per store, next to no store and next to raw driver writes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { runCommand, wholeNumber, type CommandLineSpec, type OptionSpecs } from "@durable-apps/shared/command-line";
import { CONSOLE_FULL, CONSOLE_QUICK, consoleTable, measureConsole } from "./console.js";
import { longTable, measureLong, PAGE } from "./long.js";
import { type EventFigures, eventsTable, measureEvents } from "./events.js";
import { measureSleepers, sleepersTable } from "./sleepers.js";
import { measureStreams, streamsTable } from "./streams.js";
import { measureLangGraphLong } from "./peers/langgraph-loop.js";
import { report, type StoreResult } from "./report.js";
import type { Peer } from "./peers/peer.js";
import { measureTickets } from "./runs.js";
import { measureScale, scaleTable } from "./scale/measure.js";
import { measureQueued, queuedTable } from "./queued/measure.js";
import { FULL_SIZES, sweep, type SweepSizes } from "./sweeps.js";
import { memoryTarget, postgresTarget, prismaSqliteTarget, redisTarget, sqliteTarget, type Target } from "./targets.js";

const BENCH_COMMAND = {
  command: "pnpm bench",
  about:
    "what durability costs, per store (memory, SQLite, SQLite through Prisma, Redis, PostgreSQL through Prisma): the tickets flow one run at a time and 16 at once, " +
    "the cost per tool call over no store, the same writes straight through the driver, what security options and an OpenTelemetry SDK add per run, and how the cost grows; " +
    "next to the peers on the same kind of store (LangGraph.js with its memory, SQLite and PostgreSQL savers, DBOS Transact on PostgreSQL). " +
    "Prints tables; writes JSON to apps/bench/results/. A store whose server does not answer is skipped.",
  options: {
    "budget-ms": {
      type: "string",
      value: "<ms>",
      defaultText: "1500, or 300 with --quick",
      about: "the time each runs-per-second measure takes, per store and per peer",
    },
    out: {
      type: "string",
      value: "<dir>",
      defaultText: "apps/bench/results",
      about: "the folder the run's JSON is written to",
    },
    stores: {
      type: "string",
      value: "<names>",
      default: "memory,sqlite,prisma-sqlite,redis,postgresql",
      about: "the stores to measure, comma-separated, each with its peers",
    },
    scale: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: runs/s with 1, 2, 4 and 8 worker processes (16 runs at once each) on a Redis of its own and on a Redis Cluster of its own " +
        "(3 masters, a replica each; then again with replicas: 1), AOF appendfsync always on every node; --budget-ms per point",
    },
    queued: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: runs started on a queue (runner.start) and served by 1, 2 and 4 worker processes (16 runs at once each, polling every 100 ms) on SQLite, Redis and PostgreSQL, " +
        "and the same flow on a DBOS queue on PostgreSQL alike: runs/s working off a backlog of --backlog runs, and the start-to-claim latency p50/p99 of 40 runs started one every 25 ms",
    },
    backlog: {
      type: "string",
      value: "<n>",
      defaultText: "400, or 60 with --quick",
      about: "with --queued: the runs started before the workers",
    },
    console: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: the console's time to serve a run's page and its refresh on SQLite, for a run with a 20 MiB result and a run of 1,000 steps, " +
        "over a 500 MB events file (with --quick: 2 MiB, 100 steps, 20 MB); each should stay under a second",
    },
    long: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: a tool loop of --steps model calls (one ~2 KB tool result each) per store, and the same loop in LangGraph.js on the saver of its kind " +
        "(not with --quick): time per step early (10–50) and late (the last 40), bytes held per step, and the time to recover it cut off at step 10 and at its last",
    },
    steps: {
      type: "string",
      value: "<n>",
      defaultText: "300, or 60 with --quick",
      about: "with --long: the model calls of the loop",
    },
    streams: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: per store, a streamed reply of --tokens tokens (one a ms) without and with the run's durable stream (stream: true): " +
        "the caller's time to first token and per-token latency, a follower's lag, and the bytes the stream keeps per 1,000 tokens",
    },
    tokens: {
      type: "string",
      value: "<n>",
      defaultText: "1000, or 200 with --quick",
      about: "with --streams: the tokens of each reply",
    },
    sleepers: {
      type: "boolean",
      default: false,
      about:
        "instead of the rest: per store, a worker's poll with no run asleep and with --asleep runs asleep for an hour (its time, CPU and round trips should not grow), " +
        "then the wake-up lag p50/p99 of --due runs due at one instant, woken by one worker (64 at once, polling every 100 ms); " +
        "then what one sendEvent costs (store calls, server round trips, ms) to each of 200 waiting runs (20 with --quick), and the lag from it to the run going on",
    },
    asleep: {
      type: "string",
      value: "<n>",
      defaultText: "10000, or 500 with --quick",
      about: "with --sleepers: the runs asleep while the polls are timed",
    },
    due: {
      type: "string",
      value: "<n>",
      defaultText: "1000, or 100 with --quick",
      about: "with --sleepers: the runs due at once",
    },
    quick: {
      type: "boolean",
      default: false,
      about: "a smoke run for CI: two sizes per sweep instead of the full range, and a short budget",
    },
  },
  environment: {
    REDIS_URL: "the Redis to measure (default: redis://127.0.0.1:6379)",
    DATABASE_URL: "the PostgreSQL to measure (default: postgresql://postgres@127.0.0.1:5432/test)",
  },
  example: "pnpm bench --quick --budget-ms 500 --stores sqlite,postgresql",
} as const satisfies CommandLineSpec<OptionSpecs>;

/** Prisma (on PostgreSQL and on SQLite) costs milliseconds per write: its log-length sweep stops one size earlier. */
const HEAVY: SweepSizes = { ...FULL_SIZES, recoveredCalls: [5, 50, 500] };
const QUICK: SweepSizes = {
  stateBytes: [200, 100_000],
  callsPerSuperstep: [1, 10],
  recoveredCalls: [5, 50],
  unfinishedRuns: [20, 60],
};

const TARGETS = {
  memory: memoryTarget,
  sqlite: sqliteTarget,
  "prisma-sqlite": prismaSqliteTarget,
  redis: redisTarget,
  postgresql: postgresTarget,
} satisfies Record<string, () => Target | Promise<Target | string>>;

/** The stores `--stores` names, in the bench's order; a name it does not know is a usage error. */
function storeNames(list: string): Array<keyof typeof TARGETS> {
  const names = list.split(",").map((name) => name.trim());
  for (const name of names)
    if (!Object.hasOwn(TARGETS, name))
      throw new CommandLineError(`--stores: no store ${JSON.stringify(name)} (${Object.keys(TARGETS).join(", ")}).`);
  return (Object.keys(TARGETS) as Array<keyof typeof TARGETS>).filter((name) => names.includes(name));
}

await runCommand(BENCH_COMMAND, async (values) => {
  const budgetMs = wholeNumber("budget-ms", values["budget-ms"] ?? (values.quick ? "300" : "1500"));
  const machine = {
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    at: new Date().toISOString(),
  };
  console.log(
    `@durable bench on ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, Node ${machine.node}\n`,
  );
  if (values.console) {
    const figures = await measureConsole(values.quick ? CONSOLE_QUICK : CONSOLE_FULL, (line) => console.log(line));
    console.log(`\n${consoleTable(figures).join("\n")}`);
    writeResults(values.out, "console", machine.at, { machine, ...figures });
    return;
  }
  if (values.long) {
    const steps = wholeNumber("steps", values.steps ?? (values.quick ? "60" : "300"));
    if (steps < 60)
      throw new CommandLineError("--steps must be at least 60: the early steps are 10 to 50, the late the last 40.");
    const figures = await eachTarget(values.stores, async (target) => {
      const ours = await measureLong(target.name, () => target.store(), steps);
      console.log(`measured ${target.name}`);
      // The LangGraph.js saver of its kind, on the same shape (not with --quick: CI runs only ours).
      const peer =
        values.quick || target.saver === undefined ? undefined : await measureLangGraphLong(target.saver, steps, PAGE);
      if (typeof peer === "string") console.log(`skipped: ${peer}`);
      // The same loop adds the same content to either run's data: the peer's row is judged against ours.
      return peer === undefined || typeof peer === "string"
        ? [ours]
        : [ours, { ...peer, newBytesPerStep: ours.newBytesPerStep }];
    });
    console.log(`\n${longTable(figures).join("\n")}`);
    writeResults(values.out, "long", machine.at, { machine, steps, figures });
    return;
  }
  if (values.streams) {
    const tokens = wholeNumber("tokens", values.tokens ?? (values.quick ? "200" : "1000"));
    const figures = await eachTarget(values.stores, async (target) => {
      const measured = await measureStreams(target.name, () => target.store(), tokens);
      console.log(`measured ${target.name}`);
      return [measured];
    });
    console.log(`\n${streamsTable(figures).join("\n")}`);
    writeResults(values.out, "streams", machine.at, { machine, tokens, figures });
    return;
  }
  if (values.sleepers) {
    const asleep = wholeNumber("asleep", values.asleep ?? (values.quick ? "500" : "10000"));
    const due = wholeNumber("due", values.due ?? (values.quick ? "100" : "1000"));
    const sends = values.quick ? 20 : 200;
    const events: EventFigures[] = [];
    const figures = await eachTarget(values.stores, async (target) => {
      const measured = await measureSleepers(target.name, () => target.store(), asleep, due, target.countTrips);
      events.push(await measureEvents(target.name, () => target.store(), sends, target.countTrips));
      console.log(`measured ${target.name}`);
      return [measured];
    });
    console.log(`\n${sleepersTable(figures).join("\n")}`);
    console.log(`\n${eventsTable(events).join("\n")}`);
    writeResults(values.out, "sleepers", machine.at, { machine, figures, events });
    return;
  }
  if (values.queued) {
    const backlog = wholeNumber("backlog", values.backlog ?? (values.quick ? "60" : "400"));
    const curves = await measureQueued(values.quick ? [1, 2] : [1, 2, 4], backlog, values.quick ? 10 : 40, (line) =>
      console.log(line),
    );
    console.log(`\n${queuedTable(curves).join("\n")}`);
    writeResults(values.out, "queued", machine.at, { machine, backlog, curves });
    return;
  }
  if (values.scale) {
    const figures = await measureScale([1, 2, 4, 8], budgetMs, (line) => console.log(line));
    console.log(`\n${scaleTable(figures.curves).join("\n")}`);
    writeResults(values.out, "scale", machine.at, { machine, budgetMs, ...figures });
    return;
  }

  const results: StoreResult[] = [];
  const skipped: string[] = [];
  const targets: Array<Target | string> = [];
  for (const name of storeNames(values.stores)) targets.push(await TARGETS[name]());
  for (const target of targets) {
    if (typeof target === "string") {
      skipped.push(target);
      console.log(`skipped: ${target}`);
      continue;
    }
    const started = performance.now();
    const peers: Peer[] = [];
    try {
      for (const peer of (await target.peers?.()) ?? []) {
        if (typeof peer === "string") {
          skipped.push(peer);
          console.log(`skipped: ${peer}`);
        } else peers.push(peer);
      }
      const store = await target.store();
      const raw = await target.raw?.();
      const tickets = await measureTickets(store, raw, budgetMs, peers, target.countTrips);
      await raw?.close();
      await store.close();
      const sizes = values.quick
        ? QUICK
        : target.name.startsWith("prisma") || target.name === "postgresql"
          ? HEAVY
          : FULL_SIZES;
      const sweeps = await sweep(() => target.store(), sizes);
      results.push({ store: target.name, detail: target.detail, tickets, sweeps });
      console.log(`measured ${target.name} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    } finally {
      for (const peer of peers) await peer.close();
      await target.cleanup();
    }
  }

  console.log(`\n${report(results)}`);
  for (const reason of skipped) console.log(`skipped: ${reason}`);
  writeResults(values.out, "bench", machine.at, { machine, budgetMs, results, skipped });
});

/** Writes the figures as JSON to `<--out, or apps/bench/results>/<kind>-<when, to the second>.json`. */
/**
 * Measures each named store that answers with `measure` (a store that does
 * not is skipped, and said so), cleaning up after each; the figures in order.
 */
async function eachTarget<F>(list: string, measure: (target: Target) => Promise<F[]>): Promise<F[]> {
  const figures: F[] = [];
  for (const name of storeNames(list)) {
    const target = await TARGETS[name]();
    if (typeof target === "string") {
      console.log(`skipped: ${target}`);
      continue;
    }
    try {
      figures.push(...(await measure(target)));
    } finally {
      await target.cleanup();
    }
  }
  return figures;
}

function writeResults(out: string | undefined, kind: string, at: string, figures: unknown): void {
  // pnpm runs the bench in apps/bench: a relative --out is taken from where pnpm was started.
  const dir =
    out === undefined
      ? fileURLToPath(new URL("../results/", import.meta.url))
      : resolve(process.env.INIT_CWD ?? process.cwd(), out);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${kind}-${at.slice(0, 19).replaceAll(":", "-")}.json`);
  writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}
