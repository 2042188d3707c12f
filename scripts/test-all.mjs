// The README's test command (`pnpm test`): builds, then runs the repository's checks and every
// package's tests as suites scheduled to the machine, and reports every suite that failed (not only
// the first) before it exits non-zero.
//
// Why a scheduler: started all at once, the suites (Redis clusters, PostgreSQL servers, Chromium,
// SIGKILL soaks, packing tarballs) put a load of 20+ on a 2-core machine, and tests that measure
// time fail on load they made themselves. Each suite has a load (the cores it keeps busy, measured
// alone); suites start longest first while their loads fit in the machine's budget. Each suite's CPU
// time is printed at the end, to keep the table below true.
//
// Usage: node scripts/test-all.mjs [--load <n>] [--list]
//   --load <n>  the budget of load at once (default: the machine's cores × 1.5: suites also wait,
//               on child processes, servers, leases and timeouts)
//   --list      print the suites in the order they start, with their loads, and run nothing
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readPackages } from "./check-graph.mjs";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/**
 * Each suite's load (its CPU time over its wall time) and its length (minutes), as whole CI runs on the
 * 2-core machine measured them (2026-12-06: the table at the end of a run prints both), and the suites
 * it never runs beside (`apart`): suites start in the order of their length,
 * longest first, so the longest is not left to run alone at the end. A package with a test script and
 * no line here runs with load 1 and length 1.
 */
const SUITES = {
  // The two kits side by side (PostgreSQL and SQLite), each with crash trials in processes of their own, and the
  // shared PostgreSQL's work for them: the longest suite, so it starts first. Never beside the soak: on a PostgreSQL
  // and 2 cores that busy, a soak worker's lease renewals come late, and the soak's verdict (from the workers' own
  // log of their leases) finds runs claimed "while the lease was live" (3 such in a run of 2026-12-06).
  "@durable/store-prisma": { load: 1.4, minutes: 9, apart: ["@durable-apps/soak"] },
  "@durable-apps/soak": { load: 1, minutes: 5.5, apart: ["@durable/store-prisma"] },
  // One node's files and a cluster of its own, side by side.
  "@durable/store-redis": { load: 1.6, minutes: 6 },
  "@durable-apps/durability": { load: 1.3, minutes: 5 },
  // Two tsc or lint processes at once (turbo's concurrency), each waiting on the disk part of the time.
  checks: { load: 1.5, minutes: 4 },
  "@durable-apps/packaging": { load: 1.3, minutes: 3.3 },
  "@durable-apps/bench": { load: 1, minutes: 3 },
  "@durable/console": { load: 1, minutes: 2.5 },
  "@durable/store-sqlite": { load: 1.2, minutes: 2 },
  "@durable/flow": { load: 1, minutes: 2 },
  "@durable/conformance": { load: 0.5, minutes: 1.8 },
  "@durable/core": { load: 1, minutes: 1.7 },
  "@durable-apps/demo": { load: 0.5, minutes: 1.5 },
  // A server and worker processes on a SQLite file, and the chat page in Chromium.
  "@durable-apps/http-example": { load: 0.7, minutes: 1.2 },
  "@durable/loop": { load: 1, minutes: 1 },
  "@durable-apps/release": { load: 0.5, minutes: 0.7 },
  "@durable-apps/viewer": { load: 0.5, minutes: 0.5 },
  "@durable-apps/shared": { load: 0.5, minutes: 0.2 },
  "@durable/store-memory": { load: 0.5, minutes: 0.2 },
};

/** How long a suite may run before it is taken for hung. */
const SUITE_MINUTES = 20;

/** The repository's own checks, one turbo run: types, package lint, Biome, knip, the import graph. */
const CHECKS = [
  "turbo",
  "run",
  "typecheck",
  "lint",
  "check:code",
  "check:unused",
  "check:graph",
  "--concurrency=2",
  "--continue",
];

const { values } = parseArgs({
  options: { load: { type: "string" }, list: { type: "boolean", default: false }, help: { type: "boolean" } },
});
if (values.help) {
  const text = readFileSync(fileURLToPath(import.meta.url), "utf8")
    .split("\n")
    .slice(0, 14)
    .join("\n");
  console.log(text.replace(/^\/\/ ?/gm, ""));
  process.exit(0);
}
const budget = values.load === undefined ? availableParallelism() * 1.5 : Number(values.load);
if (!Number.isFinite(budget) || budget < 1) {
  console.error(`test-all: --load must be a number ≥ 1, not ${values.load}`);
  process.exit(2);
}

const suites = [
  { name: "checks", command: ["pnpm", "exec", ...CHECKS], cwd: ROOT },
  ...readPackages(ROOT)
    .filter((p) => JSON.parse(readFileSync(join(ROOT, p.dir, "package.json"), "utf8")).scripts?.test !== undefined)
    .map((p) => ({ name: p.name, command: ["pnpm", "run", "test"], cwd: join(ROOT, p.dir) })),
]
  .map((suite) => ({ ...suite, load: 1, minutes: 1, apart: [], ...SUITES[suite.name] }))
  .map((suite) => ({ ...suite, load: Math.min(suite.load, budget) }))
  .sort((a, b) => b.minutes - a.minutes || a.name.localeCompare(b.name));

if (values.list) {
  for (const suite of suites) console.log(`${suite.name}  load ${suite.load}  ~${suite.minutes} min`);
  process.exit(0);
}

const started = Date.now();
const elapsed = (since) => `${((Date.now() - since) / 1000).toFixed(0)} s`;

/** The suites running now: stopped with their whole process group when this process is. */
const running = new Set();
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(signal, () => {
    for (const child of running) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }
    process.exit(1);
  });

/** GNU time, where installed: it gives each suite's CPU time (its own and its children's). */
const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
const times = mkdtempSync(join(tmpdir(), "durable-test-all-"));
process.on("exit", () => rmSync(times, { recursive: true, force: true }));

/** The CPU seconds (user + system) GNU time wrote to `file`, if it did. */
function cpuSeconds(file) {
  const [user, system] = existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").at(-1).split(" ") : [];
  const seconds = Number(user) + Number(system);
  return Number.isFinite(seconds) ? Math.round(seconds) : undefined;
}

/** Runs a command, its output kept and printed whole when it ends, so suites' lines do not interleave. */
function run(name, command, cwd) {
  return new Promise((done) => {
    const since = Date.now();
    const output = [];
    const timeFile = join(times, name.replace(/[^\w.-]/g, "_"));
    const timed = TIME === undefined ? command : [TIME, "-f", "%U %S", "-o", timeFile, ...command];
    // A group of its own, so that stopping the suite stops its servers and child processes too.
    const child = spawn(timed[0], timed.slice(1), {
      cwd,
      env: process.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    running.add(child);
    // A suite still running after SUITE_MINUTES hangs: stopped and reported, so the others still report.
    const hang = setTimeout(() => {
      output.push(Buffer.from(`\ntest-all: ${name} still ran after ${SUITE_MINUTES} minutes: stopped.\n`));
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, SUITE_MINUTES * 60_000);
    child.stdout.on("data", (chunk) => output.push(chunk));
    child.stderr.on("data", (chunk) => output.push(chunk));
    child.on("error", (error) => output.push(Buffer.from(`${error.message}\n`)));
    child.on("close", (code, signal) => {
      clearTimeout(hang);
      running.delete(child);
      const status = code === 0 ? "passed" : `failed (${signal ?? `exit ${code}`})`;
      const text = Buffer.concat(output).toString("utf8").trimEnd();
      const cpu = cpuSeconds(timeFile);
      const cpuText = cpu === undefined ? "" : `, ${cpu} s of CPU`;
      process.stdout.write(`\n──── ${name}: ${status} in ${elapsed(since)}${cpuText} ────\n${text}\n`);
      done({ name, ok: code === 0, seconds: Math.round((Date.now() - since) / 1000), cpu });
    });
  });
}

// The build comes first: every suite tests the builds of the packages it loads.
console.log("test-all: building");
const build = await run("build", ["pnpm", "exec", "turbo", "run", "build"], ROOT);
if (!build.ok) {
  console.error("\ntest-all: the build failed; no suite ran.");
  process.exit(1);
}

console.log(`test-all: ${suites.length} suites, a load of ${budget} at once`);
const results = [];
const waiting = [...suites];
let load = 0;
/** The suites running now, by name: a suite waits while one it must run apart from runs. */
const runningNames = new Set();
await new Promise((allDone) => {
  const next = () => {
    // The longest suite that fits; a suite of more load than is free waits, unless nothing runs.
    for (let i = 0; i < waiting.length; i++) {
      const suite = waiting[i];
      if (load + suite.load > budget + 1e-9 && load > 0) continue;
      if (suite.apart.some((name) => runningNames.has(name))) continue;
      waiting.splice(i, 1);
      load += suite.load;
      runningNames.add(suite.name);
      console.log(`test-all: ${suite.name} starts (load ${load.toFixed(1)} of ${budget}, ${elapsed(started)} in)`);
      void run(suite.name, suite.command, suite.cwd).then((result) => {
        load -= suite.load;
        runningNames.delete(suite.name);
        results.push(result);
        if (results.length === suites.length) allDone();
        else next();
      });
      i = -1;
    }
  };
  next();
});

console.log(`\ntest-all: ${suites.length} suites in ${elapsed(started)}`);
for (const { name, ok, seconds, cpu } of results)
  console.log(`  ${ok ? "passed" : "FAILED"}  ${name}  ${seconds} s${cpu === undefined ? "" : ` (CPU ${cpu} s)`}`);
const failed = results.filter((result) => !result.ok);
if (failed.length > 0)
  console.log(`test-all: ${failed.length} suite(s) failed: ${failed.map((r) => r.name).join(", ")}`);
process.exit(failed.length > 0 ? 1 : 0);
