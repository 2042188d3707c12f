import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CheckpointStoreCorrupt, StoreUnavailable } from "@durable/core";
import { DurableRun, readCallLog } from "@durable/core/runner";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import { executions } from "../process/child.js";
import { CALLS, SCENARIOS, ScenarioDriver, cutShort, kitSealer } from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import type { ConformanceCase, ConformanceGroup } from "./case.js";
import { chainCases } from "./chain.js";
import { callTampers, checkpointTampers, LATEST_STEP, type Tamper } from "./tampers.js";

const CLEAN_RUNS = 500;
/** The flow whose runs the sweeps tamper with. */
const FLOW = "conformance-flow";

export const tamperGroup: ConformanceGroup = {
  name: "tamper",
  proves:
    "a recovery meets every changed, removed, swapped, forged, moved or deleted field and row it reads (the latest checkpoint's chain, the cut-short round's records), plain or encrypted, with CheckpointStoreCorrupt before any tool runs; a read of the whole log meets those of earlier rounds; clean runs never raise it",
  skipUnless: (init) =>
    init.raw === undefined ? "the initializer gives no `raw` oracle to change stored bytes" : undefined,
  cases: [
    ...sweeps(false),
    ...sweeps(true),
    ...chainCases,
    {
      name: "the store's plain head set to done by hand while the sealed latest checkpoint says running: recovery is CheckpointStoreCorrupt, no tool runs",
      skipUnless: (init) =>
        init.capabilities?.plainHead === undefined ? "the store declares no `plainHead` capability" : undefined,
      async run(h) {
        const dir = mkdtempSync(join(tmpdir(), "durable-head-"));
        const effects = join(dir, "effects");
        try {
          const runId = await cutRun(h, effects);
          const before = executions(effects, `${runId} `);
          await h.init.capabilities!.plainHead!.endByHand(h.store, runId);
          await expect(new ScenarioDriver(h.store, effects).recoverOnce("flow", runId, true)).rejects.toThrow(
            CheckpointStoreCorrupt,
          );
          expect(executions(effects, `${runId} `)).toEqual(before);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    },
    {
      name: "counted records deleted from a segment while a later segment holds as many that no checkpoint counted (a worker SIGKILLed after a resume): CheckpointStoreCorrupt, and the charge does not run again",
      timeout: 120_000,
      skipUnless: needsMultiProcess,
      run: countedRecordsDeleted,
    },
    {
      name: `${CLEAN_RUNS.toLocaleString("en")} clean runs (flows and tool loops, plain and encrypted) read back with no false alarm`,
      timeout: 600_000,
      async run(h) {
        const dir = mkdtempSync(join(tmpdir(), "durable-clean-"));
        try {
          const driver = new ScenarioDriver(h.store, join(dir, "effects"));
          const ids = Array.from(
            { length: CLEAN_RUNS },
            // Every other pair of runs is encrypted: each scenario both ways.
            (_, i) => [h.runId(`clean-${i}`, i % 4 >= 2), SCENARIOS[i % SCENARIOS.length]!] as const,
          );
          for (let i = 0; i < ids.length; i += 16)
            await Promise.all(ids.slice(i, i + 16).map(([id, scenario]) => driver.run(scenario, id)));
          for (const [id] of ids) {
            const latest = await DurableRun.latest(h.store, kitSealer, id);
            expect(latest.status).toBe("done");
            const counted = latest.calls.reduce((sum, n) => sum + n, 0);
            expect((await readCallLog(h.store, kitSealer, id, latest.calls)).length).toBe(counted);
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    },
  ],
};

/**
 * A run pauses in a round whose charge is done (segment 0 counts the refund's
 * pending record and the charge's two); a worker resumes it and is SIGKILLed
 * right after the refund's started record landed, leaving a record in
 * segment 1 that no checkpoint counts. Deleting the charge's done record
 * leaves as many records as were counted in all: only a count per segment
 * sees it, and without it the charge would run again.
 */
async function countedRecordsDeleted(h: Harness): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "durable-segments-"));
  const effects = join(dir, "effects");
  const runId = h.runId("segments");
  const recoverer = spawnWorker(h.init, h.store, effects, ["serve"], withoutFaultPoint());
  try {
    const worker = spawnWorker(h.init, h.store, effects, ["run", "charge-with-refund", runId], {
      ...process.env,
      DURABLE_FAULT_POINT: "call.after-started@2",
    });
    expect((await worker.exited()).signal, worker.stderr).toBe("SIGKILL");
    const calls = CALLS["charge-with-refund"];
    const layout = (await readCallLog(h.store, kitSealer, runId, [])).map(
      (r) => `${r.segment}.${r.seq} ${calls.get(r.callId)} ${r.kind}`,
    );
    expect(layout).toEqual(["0.0 refund pending", "0.1 charge started", "0.2 charge done", "1.0 refund started"]);
    await h.raw.deleteCall(runId, 0, 2);
    await recoverer.waitFor((l) => l === "ready");
    recoverer.send(`recover charge-with-refund ${runId}`);
    const answer = await recoverer.waitFor((l) => l.split(" ")[1] === runId, 60_000);
    expect(answer).toMatch(new RegExp(`^error ${runId} CheckpointStoreCorrupt: .*segment 0`));
    const charge = [...calls].find(([, tool]) => tool === "charge")![0];
    expect(executions(effects, `${runId} `).get(`${runId} ${charge}`)).toBe(1);
  } finally {
    recoverer.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sweeps over the latest checkpoint and over a call record, of a plain or an encrypted run. */
function sweeps(encrypted: boolean): ConformanceCase[] {
  const [run, content, signed] = encrypted
    ? [
        "an encrypted run: ",
        " (re-encrypted under the kept signature)",
        "; its ciphertext changed; forged with either key alone",
      ]
    : ["", "", "; forged"];
  return [
    {
      name: `${run}each field of the latest checkpoint changed${content} or removed${signed}; the row swapped, moved or replaced: CheckpointStoreCorrupt`,
      timeout: 300_000,
      run: (h) => sweep(h, checkpointTampers(FLOW), encrypted),
    },
    {
      name: `${run}each field of a call record of an earlier round changed${content} or removed${signed}; records swapped, moved, duplicated or deleted: the whole log's read is CheckpointStoreCorrupt, and a recovery (which reads the cut-short round's records only) runs no finished call again`,
      timeout: 300_000,
      run: (h) => sweep(h, callTampers(), encrypted, true),
    },
  ];
}

/**
 * Applies each tamper to a run of its own (encrypted or not) and checks the
 * recovery refuses it without running a tool. With `audit` (the tampers
 * change records of rounds before the cut-short one, which a recovery does
 * not read), a recovery may go on instead, running no call that had run, and
 * then a read of the whole log (what a console or an audit reads) must refuse it.
 */
async function sweep(h: Harness, tampers: readonly Tamper[], encrypted: boolean, audit = false): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "durable-tamper-"));
  const effects = join(dir, "effects");
  try {
    const driver = new ScenarioDriver(h.store, effects);
    // The control: untouched, the run recovers and pauses at its approval.
    const control = await cutRun(h, effects, encrypted);
    expect(await driver.recoverOnce("flow", control, true)).toBe("paused");
    // An encrypted run's rows hold no state, argument or result in the clear (the order id is in all of them).
    const stored = [await h.raw.readCheckpoint(control, LATEST_STEP), await h.raw.readCall(control, 0, 1)];
    for (const sealed of stored) {
      expect(sealed).toMatch(encrypted ? /^d2\.hs256:[\w-]+\.a256gcm:/ : /^d1\./);
      expect(sealed.includes("order-1")).toBe(!encrypted);
    }
    const missed: string[] = [];
    for (const tamper of tampers) {
      const [runId, other] = [await cutRun(h, effects, encrypted), await cutRun(h, effects, encrypted)];
      const before = executions(effects, `${runId} `);
      await tamper.apply(h.raw, runId, other);
      const outcome = await driver.recoverOnce("flow", runId, true).then(
        (status) => `recovered (${status})`,
        (error: unknown) => (error instanceof CheckpointStoreCorrupt ? undefined : String(error)),
      );
      if (outcome === undefined) expect(executions(effects, `${runId} `), tamper.name).toEqual(before);
      else if (!audit || !outcome.startsWith("recovered")) missed.push(`${tamper.name}: ${outcome}`);
      else {
        for (const [call, times] of before)
          expect(executions(effects, `${runId} `).get(call), `${tamper.name}: ${call} ran again`).toBe(times);
        const { calls } = await DurableRun.latest(h.store, kitSealer, runId);
        const whole = await readCallLog(h.store, kitSealer, runId, calls).then(
          () => "the whole log read back",
          (error: unknown) => (error instanceof CheckpointStoreCorrupt ? undefined : String(error)),
        );
        if (whole !== undefined) missed.push(`${tamper.name}: ${outcome}, and ${whole}`);
      }
    }
    expect(missed, `${missed.length} of ${tampers.length} tampered runs were not refused as corrupt`).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cutRun(h: Harness, effects: string, encrypted = false): Promise<string> {
  const runId = h.runId("tamper", encrypted);
  await expect(new ScenarioDriver(cutShort(h.store, new Set(["refund"])), effects).run("flow", runId)).rejects.toThrow(
    StoreUnavailable,
  );
  return runId;
}
