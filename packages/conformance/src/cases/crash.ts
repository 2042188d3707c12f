import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { FAULT_POINTS, type FaultPoint } from "@durable/core/internal";
import { canonicalJson } from "@durable/core/runner";
import type { Harness } from "../harness/harness.js";
import { acknowledged, acknowledgmentsFile } from "../process/acknowledgments.js";
import { attemptExecutions, type Child } from "../process/child.js";
import {
  CALLS,
  SCENARIOS,
  ScenarioDriver,
  attemptsOf,
  finalData,
  type Recovery,
  type ScenarioName,
} from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import type { ConformanceGroup } from "./case.js";
import { NOTHING_ISSUED, callVerdict } from "./crash-verdict.js";

/**
 * Trials run at once: each is a worker that dies and a recovery in another
 * process, busy the whole time, so more trials than cores only wait on each
 * other (and stretch every timeout of the kit running beside them).
 */
const CONCURRENT_TRIALS = Math.max(1, Math.min(4, availableParallelism()));

interface Trial {
  readonly scenario: ScenarioName;
  readonly point: FaultPoint;
  readonly hit: number;
  /** Every other trial's run is encrypted (`encryptionKey`): what a crash leaves must open and recover the same. */
  readonly encrypted: boolean;
}

export const crashGroup: ConformanceGroup = {
  name: "crash",
  proves:
    "a worker killed with SIGKILL at every fault point of a flow and a tool loop (every other run encrypted), each with a tool that fails its first attempt and retries, is recovered by another process: calls whose result was stored never run again, nor attempts whose failure was stored, a call waiting between attempts goes on with the next, calls in doubt are reported and rerun on a recorded decision, and the run ends as if nothing happened",
  skipUnless: needsMultiProcess,
  cases: [
    {
      name: "a worker killed at every fault point in turn, in a flow (with a fan-out) and a tool loop",
      timeout: 900_000,
      async run(h) {
        const points = chosenPoints();
        const dir = mkdtempSync(join(tmpdir(), "durable-crash-"));
        const effects = join(dir, "effects");
        // Started inside the try: a worker that refuses to start (a stale build) leaves no folder behind.
        let recoverer: Child | undefined;
        try {
          const serving = spawnWorker(h.init, h.store, effects, ["serve"], withoutFaultPoint());
          recoverer = serving;
          // The recoverer starts while each scenario's reference and traced runs go, all at once.
          const [, ...prepared] = await Promise.all([
            serving.waitFor((l) => l === "ready"),
            ...SCENARIOS.map(async (scenario) => {
              const [reference, hits] = await Promise.all([
                referenceOutcome(h, scenario, join(dir, "reference")),
                traceHits(h, scenario, join(dir, "trace")),
              ]);
              return { scenario, reference, hits };
            }),
          ]);
          const trials: Trial[] = [];
          const references = new Map<ScenarioName, Reference>();
          for (const { scenario, reference, hits } of prepared) {
            references.set(scenario, reference);
            for (const point of points)
              for (let hit = 1; hit <= (hits.get(point) ?? 0); hit++)
                trials.push({ scenario, point, hit, encrypted: trials.length % 2 === 1 });
          }
          const failures = await inPool(trials, CONCURRENT_TRIALS, (trial) =>
            crashAndRecover(h, serving, effects, trial, references.get(trial.scenario)!),
          );
          console.log(crashTable(h.init.name, trials, failures));
          const failed = [...failures].filter(([, message]) => message !== undefined);
          if (failed.length > 0) {
            throw new Error(
              `${failed.length} of ${trials.length} crash trials failed:\n${failed.map(([t, m]) => `- ${t.scenario}${t.encrypted ? " (encrypted)" : ""} at ${t.point}@${t.hit}: ${m}`).join("\n")}`,
            );
          }
        } finally {
          recoverer?.kill();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    },
  ],
};

/** Names the fault points the crash group kills at, comma-separated (every point when unset): to rerun one point while fixing a store. */
const CRASH_POINTS_VARIABLE = "DURABLE_CRASH_POINTS";

function chosenPoints(): readonly FaultPoint[] {
  const value = process.env[CRASH_POINTS_VARIABLE];
  if (value === undefined || value.trim() === "") return FAULT_POINTS;
  const points = value.split(",").map((p) => p.trim());
  const unknown = points.filter((p) => !(FAULT_POINTS as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new TypeError(
      `${CRASH_POINTS_VARIABLE}=${value} names no fault point ${unknown.join(", ")}: use a comma-separated list of ${FAULT_POINTS.join(", ")}.`,
    );
  return points as FaultPoint[];
}

/** What a run of the scenario ends with when nothing goes wrong. */
interface Reference {
  readonly text: string;
  /** A loop's count of model calls (undefined for a flow). */
  readonly modelCalls: unknown;
}

async function referenceOutcome(h: Harness, scenario: ScenarioName, effects: string): Promise<Reference> {
  const runId = h.runId(`reference-${scenario}`);
  await new ScenarioDriver(h.store, effects).run(scenario, runId);
  const final = await finalData(h.store, runId);
  return { text: comparable(final), modelCalls: final.data.program["modelCalls"] };
}

/**
 * What a run ended with, as a crash must leave it: everything but a loop's
 * count of model calls, since a worker killed after a `model` record made a
 * call that maxSteps counts and that a run without a crash does not make.
 */
function comparable(final: Awaited<ReturnType<typeof finalData>>): string {
  const { modelCalls: _made, ...program } = final.data.program;
  // Where the last round's records begin in the log depends on the segments recoveries opened, not on the outcome.
  const { roundStart: _start, ...data } = final.data;
  return canonicalJson({ ...final, data: { ...data, program } });
}

/** How many times a clean run of the scenario reaches each fault point, traced in a worker process. */
async function traceHits(h: Harness, scenario: ScenarioName, effects: string): Promise<Map<string, number>> {
  const child = spawnWorker(h.init, h.store, effects, ["run", scenario, h.runId(`trace-${scenario}`)], {
    ...process.env,
    DURABLE_FAULT_POINT: "trace",
  });
  const { code } = await child.exited();
  if (code !== 0) throw new Error(`the traced worker failed (exit ${code}): ${child.stderr}`);
  const hits = new Map<string, number>();
  for (const line of child.stderr.split("\n")) {
    if (line.startsWith("durable-fault-point ")) hits.set(line.slice(20), (hits.get(line.slice(20)) ?? 0) + 1);
  }
  return hits;
}

/** How often a trial runs again on a new run when the store did not answer its worker before the fault point. */
const UNAVAILABLE_RETRIES = 2;

/** One trial: a worker dies at the point, another process recovers the run. Returns what went wrong, or undefined. */
async function crashAndRecover(
  h: Harness,
  recoverer: Child,
  effects: string,
  trial: Trial,
  reference: Reference,
  retries = UNAVAILABLE_RETRIES,
): Promise<string | undefined> {
  const runId = h.runId(`crash-${trial.scenario}`, trial.encrypted);
  const faultPoint = `${trial.point}@${trial.hit}`;
  const worker = spawnWorker(h.init, h.store, effects, ["run", trial.scenario, runId], {
    ...process.env,
    DURABLE_FAULT_POINT: faultPoint,
  });
  const exit = await worker.exited();
  if (exit.signal !== "SIGKILL") {
    // A worker the store failed before it reached the point (a busy server did not answer in time) judged
    // nothing of the store's durability: the trial runs again, on a new run. Its run is left as it is.
    if (retries > 0 && /\bSTORE_UNAVAILABLE\b|StoreUnavailable:/.test(worker.stderr))
      return crashAndRecover(h, recoverer, effects, trial, reference, retries - 1);
    return `the worker was not killed there (exit ${exit.code}): ${worker.stderr.trim()}`;
  }

  // Read before recovery starts: what the killed worker alone issued and was told.
  const before = attemptExecutions(effects, `${runId} `);
  const witnessed = acknowledged(acknowledgmentsFile(effects), runId);

  recoverer.send(`recover ${trial.scenario} ${runId}`);
  const answer = await recoverer.waitFor((l) => l.split(" ")[1] === runId, 120_000);
  if (!answer.startsWith("recovered ")) return `recovery failed: ${answer}`;
  const { tries, reported, firstReport } = JSON.parse(answer.slice(`recovered ${runId} `.length)) as Recovery;
  const after = attemptExecutions(effects, `${runId} `);
  const recovered = acknowledged(acknowledgmentsFile(effects), runId);

  for (const [callId, tool] of CALLS[trial.scenario]) {
    const ranBefore = byAttempt(before, `${runId} ${callId} `);
    const ranAfter = byAttempt(after, `${runId} ${callId} `, ranBefore);
    const wrong = callVerdict({
      tool,
      attempts: attemptsOf(trial.scenario, tool),
      before: ranBefore,
      after: ranAfter,
      tries,
      reports: reported[callId] ?? 0,
      // With one try, every report was its first pass's, before it wrote.
      reportedFirst:
        firstReport !== undefined ? firstReport.includes(callId) : tries === 1 ? callId in reported : undefined,
      witness: witnessed.get(callId) ?? NOTHING_ISSUED,
      decided: recovered.get(callId)?.decidedAcked ?? false,
    });
    if (wrong !== undefined) return `${tool} (${callId}): ${wrong}`;
  }
  const ended = await finalData(h.store, runId);
  const final = comparable(ended);
  if (final !== reference.text) return `the run ended with ${final}; without a crash it ends with ${reference.text}`;
  const made = ended.data.program["modelCalls"];
  if (made !== reference.modelCalls && made !== Number(reference.modelCalls) + 1) {
    return `the loop counted ${String(made)} model calls; without a crash it makes ${String(reference.modelCalls)}, and one crash adds one at most`;
  }
  return undefined;
}

/** The counts of the `<prefix><attempt>` keys by attempt, less those of `since` (none left at zero). */
function byAttempt(
  counts: ReadonlyMap<string, number>,
  prefix: string,
  since: ReadonlyMap<number, number> = new Map(),
): Map<number, number> {
  const attempts = new Map<number, number>();
  for (const [key, n] of counts) {
    if (!key.startsWith(prefix)) continue;
    const attempt = Number(key.slice(prefix.length));
    const more = n - (since.get(attempt) ?? 0);
    if (more > 0) attempts.set(attempt, more);
  }
  return attempts;
}

/** Runs `task` over `items`, at most `width` at once; maps each item to its result. */
async function inPool<T, R>(items: readonly T[], width: number, task: (item: T) => Promise<R>): Promise<Map<T, R>> {
  const results = new Map<T, R>();
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      results.set(item, await task(item));
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/** Points × scenarios: how many of the trials at each point recovered correctly. */
function crashTable(store: string, trials: readonly Trial[], failures: ReadonlyMap<Trial, string | undefined>): string {
  const cell = (scenario: ScenarioName, point: FaultPoint) => {
    const at = trials.filter((t) => t.scenario === scenario && t.point === point);
    const ok = at.filter((t) => failures.get(t) === undefined).length;
    return at.length === 0 ? "-" : `${ok}/${at.length}`;
  };
  const width = Math.max(...FAULT_POINTS.map((p) => p.length));
  const lines = [
    `crash trials on ${store} (recovered correctly / worker killed there):`,
    `${"fault point".padEnd(width)}  ${SCENARIOS.map((s) => s.padStart(6)).join("")}`,
  ];
  for (const point of FAULT_POINTS)
    lines.push(`${point.padEnd(width)}  ${SCENARIOS.map((s) => cell(s, point).padStart(6)).join("")}`);
  return lines.join("\n");
}
