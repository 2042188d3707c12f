import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalJson, FAULT_POINTS, type FaultPoint } from "@durable/core/runner";
import type { Harness } from "../harness.js";
import { acknowledged, acknowledgmentsFile, type CallWitness } from "../process/acknowledgments.js";
import { executions, type Child } from "../process/child.js";
import {
  CALLS,
  IDEMPOTENT_TOOLS,
  SCENARIOS,
  ScenarioDriver,
  finalData,
  type ScenarioName,
} from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import type { ConformanceGroup } from "./case.js";

/** Trials run at once: each is a worker that dies and a recovery in another process. */
const CONCURRENT_TRIALS = 4;

interface Trial {
  readonly scenario: ScenarioName;
  readonly point: FaultPoint;
  readonly hit: number;
}

export const crashGroup: ConformanceGroup = {
  name: "crash",
  proves:
    "a worker killed with SIGKILL at every fault point of a flow and a tool loop is recovered by another process: calls whose result was stored never run again, calls in doubt are reported, and the run ends as if nothing happened",
  skipUnless: needsMultiProcess,
  cases: [
    {
      name: "a worker killed at every fault point in turn, in a flow (with a fan-out) and a tool loop",
      timeout: 900_000,
      async run(h) {
        const points = chosenPoints();
        const dir = mkdtempSync(join(tmpdir(), "durable-crash-"));
        const effects = join(dir, "effects");
        const recoverer = spawnWorker(h.init, h.store, effects, ["serve"], withoutFaultPoint());
        try {
          await recoverer.waitFor((l) => l === "ready");
          const trials: Trial[] = [];
          const references = new Map<ScenarioName, Reference>();
          for (const scenario of SCENARIOS) {
            references.set(scenario, await referenceOutcome(h, scenario, join(dir, "reference")));
            const hits = await traceHits(h, scenario, join(dir, "trace"));
            for (const point of points)
              for (let hit = 1; hit <= (hits.get(point) ?? 0); hit++) trials.push({ scenario, point, hit });
          }
          const failures = await inPool(trials, CONCURRENT_TRIALS, (trial) =>
            crashAndRecover(h, recoverer, effects, trial, references.get(trial.scenario)!),
          );
          console.log(crashTable(h.init.name, trials, failures));
          const failed = [...failures].filter(([, message]) => message !== undefined);
          if (failed.length > 0) {
            throw new Error(
              `${failed.length} of ${trials.length} crash trials failed:\n${failed.map(([t, m]) => `- ${t.scenario} at ${t.point}@${t.hit}: ${m}`).join("\n")}`,
            );
          }
        } finally {
          recoverer.kill();
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
  return canonicalJson({ ...final, data: { ...final.data, program } });
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

/** One trial: a worker dies at the point, another process recovers the run. Returns what went wrong, or undefined. */
async function crashAndRecover(
  h: Harness,
  recoverer: Child,
  effects: string,
  trial: Trial,
  reference: Reference,
): Promise<string | undefined> {
  const runId = h.runId(`crash-${trial.scenario}`);
  const faultPoint = `${trial.point}@${trial.hit}`;
  const worker = spawnWorker(h.init, h.store, effects, ["run", trial.scenario, runId], {
    ...process.env,
    DURABLE_FAULT_POINT: faultPoint,
  });
  const exit = await worker.exited();
  if (exit.signal !== "SIGKILL") return `the worker was not killed there (exit ${exit.code}): ${worker.stderr.trim()}`;

  // Read before recovery starts: what the killed worker alone issued and was told.
  const before = executions(effects, `${runId} `);
  const witnessed = acknowledged(acknowledgmentsFile(effects), runId);

  recoverer.send(`recover ${trial.scenario} ${runId}`);
  const answer = await recoverer.waitFor((l) => l.split(" ")[1] === runId, 120_000);
  if (!answer.startsWith("recovered ")) return `recovery failed: ${answer}`;
  const reported = new Set(JSON.parse(answer.slice(`recovered ${runId} `.length)) as string[]);
  const after = executions(effects, `${runId} `);

  for (const [callId, tool] of CALLS[trial.scenario]) {
    const ran = before.get(`${runId} ${callId}`) ?? 0;
    const wrong = callVerdict(tool, {
      before: ran,
      after: (after.get(`${runId} ${callId}`) ?? 0) - ran,
      reported: reported.has(tool),
      witness: witnessed.get(callId) ?? NOTHING_ISSUED,
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

const NOTHING_ISSUED: CallWitness = { startedIssued: false, startedAcked: false, doneIssued: false, doneAcked: false };

/** What the trial saw of one call, none of it read from the store under test. */
interface CallObservation {
  /** Executions by the killed worker (the side-effect file). */
  readonly before: number;
  /** Executions during recovery. */
  readonly after: number;
  /** Recovery reported the call's tool in doubt (the trial then reruns it). */
  readonly reported: boolean;
  /** What the killed worker issued and the store acknowledged (the acknowledgment file). */
  readonly witness: CallWitness;
}

/**
 * The verdict on one call of a crash trial, or undefined when it is right.
 *
 * Why it is sound without trusting the store: the side-effect file is written
 * by the tools, and the acknowledgment file by the worker around each
 * `recordCall` (issued before, acked after it resolved); both are appended
 * synchronously, so a SIGKILL loses neither. The protocol promises a resolved
 * record is durable, so after a crash the log holds every acknowledged record,
 * possibly some issued-but-unacknowledged ones, and nothing never issued.
 * Recovery reports a non-idempotent call in doubt exactly when its last record
 * is `started`. Hence, for each call:
 * - done acked: its result is stored, so it is not in doubt and never runs again;
 * - started acked, done never issued: its last record is `started`, so a
 *   non-idempotent call must be reported (an idempotent one reruns silently);
 * - reported: `started` must at least have been issued and `done` not acked;
 * - a non-idempotent call not reported runs exactly once in all; a reported one
 *   runs once more in recovery (the trial's rerun), whether it ran before the kill or not;
 * - every call runs before or after the crash (the run ends), at most once in
 *   the killed worker, and recovery reruns it at most once.
 * A store that acknowledges a record it then loses (write-behind, a commit
 * after resolving) breaks the first or the fourth rule at a kill right after
 * the acknowledgment; one that invents records breaks the third.
 */
function callVerdict(tool: string, seen: CallObservation): string | undefined {
  const { before, after, reported, witness } = seen;
  const idempotent = IDEMPOTENT_TOOLS.has(tool);
  if (before > 1) return `ran ${before} times before the crash`;
  if (after > 1) return `ran ${after} times after the crash`;
  if (before + after === 0) return "never ran, yet the run ended";
  if (reported && idempotent) return "recovery reported it in doubt, but an idempotent tool reruns without a decision";
  if (witness.doneAcked) {
    if (reported)
      return "recovery reported it in doubt, but the store had acknowledged its `done` record before the crash (a resolved recordCall must be durable)";
    if (after > 0)
      return "ran again after the crash, but the store had acknowledged its `done` record before the crash (a resolved recordCall must be durable)";
    return undefined;
  }
  if (reported && !witness.startedIssued)
    return "recovery reported it in doubt, but the killed worker never issued its `started` record";
  if (!idempotent && witness.startedAcked && !witness.doneIssued && !reported) {
    return `recovery did not report it in doubt, but the store had acknowledged its \`started\` record and no \`done\` was ever issued (it ran ${before} times before the crash, ${after} after)`;
  }
  if (reported && after !== 1)
    return `recovery reported it in doubt and the trial reran it, yet it ran ${after} times after the crash`;
  if (!idempotent && !reported && before + after !== 1) {
    return `a non-idempotent tool ran ${before + after} times (${before} before the crash, ${after} after) without being reported in doubt`;
  }
  return undefined;
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
