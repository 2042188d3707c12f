import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CheckpointStoreCorrupt, type JsonObject, type JsonValue, StoreUnavailable } from "@durable/core";
import { DurableRun, readCallLog, Sealer } from "@durable/core/runner";
import { expect } from "vitest";
import type { Harness } from "../harness.js";
import type { RawAccess } from "../initializer.js";
import { executions } from "../process/child.js";
import { CALLS, SCENARIOS, ScenarioDriver, cutShort, kitSealer } from "../process/scenarios.js";
import { needsMultiProcess, spawnWorker, withoutFaultPoint } from "../process/workers.js";
import type { ConformanceGroup } from "./case.js";

const CLEAN_RUNS = 500;
const FORGER = Sealer.withKeys("a key the workers do not have, 0123456789");

/** A change to a run's stored rows, past the store's API. */
interface Tamper {
  readonly name: string;
  apply(raw: RawAccess, runId: string, other: string): Promise<void>;
}

/**
 * A flow run cut short before its approval: checkpoints 0–2, the latest
 * counting its 10 call records (segment 0: two per call, and the retried
 * notify's `failed` and second `started`).
 */
const LATEST_STEP = 2;
const RECORDS = 10;

export const tamperGroup: ConformanceGroup = {
  name: "tamper",
  proves:
    "a recovery meets every changed, removed, swapped, forged, moved or deleted field and row of a run with CheckpointStoreCorrupt before any tool runs; clean runs never raise it",
  skipUnless: (init) =>
    init.raw === undefined ? "the initializer gives no `raw` oracle to change stored bytes" : undefined,
  cases: [
    {
      name: "each field of the latest checkpoint changed or removed; the row forged, swapped, moved or replaced: CheckpointStoreCorrupt",
      timeout: 300_000,
      run: (h) => sweep(h, checkpointTampers()),
    },
    {
      name: "each field of a call record changed or removed; records forged, swapped, moved, duplicated or deleted: CheckpointStoreCorrupt",
      timeout: 300_000,
      run: (h) => sweep(h, callTampers()),
    },
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
      name: `${CLEAN_RUNS.toLocaleString("en")} clean runs (flows and tool loops) read back with no false alarm`,
      timeout: 600_000,
      async run(h) {
        const dir = mkdtempSync(join(tmpdir(), "durable-clean-"));
        try {
          const driver = new ScenarioDriver(h.store, join(dir, "effects"));
          const ids = Array.from(
            { length: CLEAN_RUNS },
            (_, i) => [h.runId(`clean-${i}`), SCENARIOS[i % SCENARIOS.length]!] as const,
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

/** Applies each tamper to a run of its own and checks the recovery refuses it without running a tool. */
async function sweep(h: Harness, tampers: readonly Tamper[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "durable-tamper-"));
  const effects = join(dir, "effects");
  try {
    const driver = new ScenarioDriver(h.store, effects);
    // The control: untouched, the run recovers and pauses at its approval.
    const control = await cutRun(h, effects);
    expect(await driver.recoverOnce("flow", control, true)).toBe("paused");
    const missed: string[] = [];
    for (const tamper of tampers) {
      const [runId, other] = [await cutRun(h, effects), await cutRun(h, effects)];
      const before = executions(effects, `${runId} `);
      await tamper.apply(h.raw, runId, other);
      const outcome = await driver.recoverOnce("flow", runId, true).then(
        (status) => `recovered (${status})`,
        (error: unknown) => (error instanceof CheckpointStoreCorrupt ? undefined : String(error)),
      );
      if (outcome !== undefined) missed.push(`${tamper.name}: ${outcome}`);
      else expect(executions(effects, `${runId} `), tamper.name).toEqual(before);
    }
    expect(missed, `${missed.length} of ${tampers.length} tampered runs were not refused as corrupt`).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cutRun(h: Harness, effects: string): Promise<string> {
  const runId = h.runId("tamper");
  await expect(new ScenarioDriver(cutShort(h.store, new Set(["refund"])), effects).run("flow", runId)).rejects.toThrow(
    StoreUnavailable,
  );
  return runId;
}

/** The envelope `d1.<mac>.<body>` in its parts. */
function parts(sealed: string): { version: string; mac: string; body: JsonObject } {
  const [version, mac] = sealed.split(".", 2) as [string, string];
  return { version, mac, body: JSON.parse(sealed.slice(version.length + mac.length + 2)) as JsonObject };
}

function envelope(version: string, mac: string, body: JsonValue): string {
  return `${version}.${mac}.${JSON.stringify(body)}`;
}

/** Another value of the same JSON type. */
function changed(value: JsonValue | undefined): JsonValue {
  if (typeof value === "string") return `${value}x`;
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (Array.isArray(value)) return [...value, "x"];
  if (value !== null && typeof value === "object") return { ...value, tampered: true };
  return "x";
}

/** For each field of a sealed body: its value changed, and the field removed, keeping the signature. */
function fieldTampers(kind: string, sample: JsonObject, read: RowIO["read"], write: RowIO["write"]): Tamper[] {
  return Object.keys(sample).flatMap((field): Tamper[] => [
    {
      name: `${kind}: ${field} changed`,
      apply: (raw, id) =>
        rewrite(raw, id, read, write, (p) =>
          envelope(p.version, p.mac, { ...p.body, [field]: changed(p.body[field]) }),
        ),
    },
    {
      name: `${kind}: ${field} removed`,
      apply: (raw, id) =>
        rewrite(raw, id, read, write, (p) => {
          const body = { ...p.body };
          delete body[field];
          return envelope(p.version, p.mac, body);
        }),
    },
  ]);
}

interface RowIO {
  read(raw: RawAccess, runId: string): Promise<string>;
  write(raw: RawAccess, runId: string, sealed: string): Promise<void>;
}

async function rewrite(
  raw: RawAccess,
  runId: string,
  read: RowIO["read"],
  write: RowIO["write"],
  change: (p: ReturnType<typeof parts>) => string,
): Promise<void> {
  await write(raw, runId, change(parts(await read(raw, runId))));
}

/** Every way the kit changes the run's latest checkpoint. */
function checkpointTampers(): Tamper[] {
  const read: RowIO["read"] = (raw, id) => raw.readCheckpoint(id, LATEST_STEP);
  const write: RowIO["write"] = (raw, id, sealed) => raw.writeCheckpoint(id, LATEST_STEP, sealed);
  const sample = { runId: "", step: 0, status: "", segment: 0, flow: "", kind: "", identity: {}, calls: [0], data: {} };
  return [
    ...fieldTampers("checkpoint", sample, read, write),
    ...rowTampers("checkpoint", read, write, {
      "the row of step 1 in its place": async (raw, id) => write(raw, id, await raw.readCheckpoint(id, 1)),
      "the same step of another run in its place": async (raw, id, other) => write(raw, id, await read(raw, other)),
      "a call record in its place": async (raw, id) => write(raw, id, await raw.readCall(id, 0, RECORDS - 1)),
    }),
  ];
}

/** Every way the kit changes the run's call log. */
function callTampers(): Tamper[] {
  const read: RowIO["read"] = (raw, id) => raw.readCall(id, 0, 1);
  const write: RowIO["write"] = (raw, id, sealed) => raw.writeCall(id, 0, 1, sealed);
  const sample = { runId: "", segment: 0, seq: 0, round: 0, callId: "", tool: "", kind: "", args: {}, result: "" };
  const deleted = (seq: number): Tamper => ({
    name: `call log: record ${seq} of ${RECORDS} deleted`,
    apply: (raw, id) => raw.deleteCall(id, 0, seq),
  });
  return [
    ...fieldTampers("call record", sample, read, write),
    ...rowTampers("call record", read, write, {
      "swapped with the next record": async (raw, id) => {
        const [one, two] = [await raw.readCall(id, 0, 1), await raw.readCall(id, 0, 2)];
        await raw.writeCall(id, 0, 1, two);
        await raw.writeCall(id, 0, 2, one);
      },
      "the next record copied over it": async (raw, id) => write(raw, id, await raw.readCall(id, 0, 2)),
      "the same record of another run in its place": async (raw, id, other) => write(raw, id, await read(raw, other)),
      "a checkpoint in its place": async (raw, id) => write(raw, id, await raw.readCheckpoint(id, LATEST_STEP)),
    }),
    deleted(0),
    deleted(RECORDS / 2),
    deleted(RECORDS - 1),
  ];
}

/** What every row kind gets: its signature, version and framing broken, a forged body, and the swaps given. */
function rowTampers(
  kind: string,
  read: RowIO["read"],
  write: RowIO["write"],
  swaps: Record<string, (raw: RawAccess, runId: string, other: string) => Promise<void>>,
): Tamper[] {
  const purpose = kind === "checkpoint" ? "checkpoint" : "call";
  const change = (name: string, fn: (p: ReturnType<typeof parts>) => string): Tamper => ({
    name: `${kind}: ${name}`,
    apply: (raw, id) => rewrite(raw, id, read, write, fn),
  });
  return [
    change("signature changed", (p) =>
      envelope(p.version, `${p.mac.startsWith("A") ? "B" : "A"}${p.mac.slice(1)}`, p.body),
    ),
    change("signature removed", (p) => envelope(p.version, "", p.body)),
    change("version changed", (p) => envelope("d2", p.mac, p.body)),
    change("body re-sealed with another key", (p) => FORGER.seal(purpose, p.body)),
    change("body changed and re-sealed with another key", (p) =>
      FORGER.seal(purpose, { ...p.body, runId: `${String(p.body["runId"])}x` }),
    ),
    change("body cut off", (p) => envelope(p.version, p.mac, p.body).slice(0, -5)),
    change("not an envelope", () => "tampered"),
    ...Object.entries(swaps).map(([name, apply]) => ({ name: `${kind}: ${name}`, apply })),
  ];
}
