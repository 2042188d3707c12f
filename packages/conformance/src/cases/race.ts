import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StoreUnavailable } from "@durable/core";
import { expect } from "vitest";
import { attemptExecutions, type Child } from "../process/child.js";
import { CALLS, SCENARIOS, ScenarioDriver, attemptsOf, cutShort } from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import type { ConformanceGroup } from "./case.js";

const WORKERS = 8;
const TRIALS = 100;
/** Races a store may leave without a clean winner by not answering a claim (a busy server): more is a flaky store. */
const MAX_UNANSWERED = TRIALS / 10;

export const raceGroup: ConformanceGroup = {
  name: "race",
  proves: `of ${WORKERS} processes recovering one run at once, exactly one wins and no attempt of a tool runs twice`,
  skipUnless: needsMultiProcess,
  cases: [
    {
      name: `${WORKERS} processes recover one run at once, ${TRIALS} times (flows and tool loops): exactly one wins each time, no attempt of a tool runs twice`,
      timeout: 600_000,
      async run(h) {
        const dir = mkdtempSync(join(tmpdir(), "durable-race-"));
        const effects = join(dir, "effects");
        // Started inside the try: a worker that refuses to start (a stale build) leaves no folder behind.
        const workers: Child[] = [];
        try {
          for (let i = 0; i < WORKERS; i++)
            workers.push(spawnWorker(h.init, h.store, effects, ["serve"], withoutFaultPoint()));
          await Promise.all(workers.map((w) => w.waitFor((l) => l === "ready")));
          // This worker loses its connection before the calls after the first ones: the run is left for recovery.
          const setup = new ScenarioDriver(cutShort(h.store, new Set(["charge", "notify", "audit"])), effects);
          const runs: Array<[string, (typeof SCENARIOS)[number]]> = [];
          /** Runs whose race had no clean winner: a claim the store did not answer may have been it. */
          const unanswered: string[] = [];
          for (let trial = 0; trial < TRIALS; trial++) {
            const scenario = SCENARIOS[trial % SCENARIOS.length]!;
            const runId = h.runId(`race-${scenario}`);
            runs.push([runId, scenario]);
            await expect(setup.run(scenario, runId)).rejects.toThrow(StoreUnavailable);
            // Every worker reads the latest checkpoint, then all claim the same step at once.
            for (const w of workers) w.send(`race ${scenario} ${runId}`);
            await Promise.all(workers.map((w) => w.waitFor((l) => l === `at-claim ${runId}`)));
            for (const w of workers) w.send(`go ${runId}`);
            const answers = await Promise.all(
              workers.map((w) => w.waitFor((l) => l.split(" ")[1] === runId && !l.startsWith("at-claim"))),
            );
            const said = (word: string) => answers.filter((a) => a.startsWith(`${word} `));
            expect(said("won").length, answers.join("; ")).toBeLessThanOrEqual(1);
            expect(said("won").length + said("conflict").length + said("unavailable").length, answers.join("; ")).toBe(
              WORKERS,
            );
            // A claim the store did not answer may have won: the trial then shows no clean winner.
            if (said("won").length === 1) expect(said("won"), answers.join("; ")).toEqual([`won ${runId} paused`]);
            else unanswered.push(runId);
          }
          expect(
            unanswered.length,
            `claims the store did not answer left ${unanswered.length} of ${TRIALS} races without a clean winner: ${unanswered.join(", ")}`,
          ).toBeLessThanOrEqual(MAX_UNANSWERED);
          const counts = attemptExecutions(effects);
          for (const [runId, scenario] of runs) {
            for (const [callId, tool] of CALLS[scenario]) {
              // Each attempt runs once (the retried tool's first fails); the refund waits on an approval: nobody runs it
              // here. Where no claim was seen to win, the winner may have stopped anywhere: no attempt ran twice.
              const ran = Array.from(
                { length: attemptsOf(scenario, tool) },
                (_, i) => counts.get(`${runId} ${callId} ${i + 1}`) ?? 0,
              );
              if (unanswered.includes(runId))
                expect(Math.max(...ran), `${runId} ${callId}, by attempt: ${ran.join(", ")}`).toBeLessThanOrEqual(1);
              else expect(ran, `${runId} ${callId}, by attempt`).toEqual(ran.map(() => (tool === "refund" ? 0 : 1)));
            }
          }
        } finally {
          for (const w of workers) w.kill();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    },
  ],
};
