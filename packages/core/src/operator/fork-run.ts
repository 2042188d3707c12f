import { canonicalCopy } from "../base/canonical.js";
import { CheckpointConflict, CheckpointStoreCorrupt, InvalidInput, LeaseHeld } from "../base/errors.js";
import { isAsleepOwner } from "../store/owners.js";
import { isCount, isJsonObject, type JsonObject } from "../base/json.js";
import { assertRunId, newRunId } from "../base/names.js";
import type { OptionTable } from "../base/option-checks.js";
import { EVENT_TOOL } from "../calls/tools.js";
import { type CallRecord, readCallLog } from "../log/call-log.js";
import { eventStore, type InboxEvent, readInbox, sealEvent } from "../log/inbox.js";
import { RunWriter } from "../log/run-writer.js";
import { envelopeJson, readEnvelope, type RunEnvelope } from "../run/envelope.js";
import { copyHistory } from "../run/fork-copy.js";
import { driveLease } from "../run/lease.js";
import { assertReason } from "../run/run-changes.js";
import { checkRunVersion, type RunVersion } from "../run/versions.js";
import { openHistory, sealNext } from "../seal/chain.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import { type CheckpointStore, isEnded } from "../store/contract.js";
import { type Acting, acting, latestSeen, mark } from "./actions.js";
import { OPERATOR_OPTIONS, type OperatorOptions } from "./options.js";
import { traceStart } from "../telemetry/tracing.js";

/** What `forkRun` takes: the step to fork from, and the operator's options. */
export interface ForkOptions extends OperatorOptions {
  /** The original's step whose history the fork keeps (rows 0 to it, and the call records they count). */
  readonly fromStep: number;
  /** The fork's run id (default `newRunId()`); a taken one is `CheckpointConflict`. */
  readonly runId?: string;
  /**
   * The fork's program data at `fromStep`, from the original's as stored (a
   * flow's `state`, `frontier`, …; a loop's `messages`, …): plain JSON, checked
   * by the worker that reads it. Default: the original's.
   */
  readonly program?: (program: JsonObject) => JsonObject | Promise<JsonObject>;
  /** Why, recorded with the fork's mark (1 to 1,000 characters). */
  readonly reason?: string;
  /**
   * The version of the code the fork goes on with (see docs/protocol.md,
   * "Versions"); `null`: code that names none. Default: the original's.
   */
  readonly version?: RunVersion | null;
}

/** Where a fork stands once made: its run id, and the step of its first row of its own (`fromStep` + 1). */
export interface ForkedRun {
  readonly runId: string;
  readonly step: number;
}

const FORK_OPTIONS: OptionTable<ForkOptions> = {
  ...OPERATOR_OPTIONS,
  fromStep: true,
  runId: "string",
  program: "function",
  reason: true,
  version: true,
};

/**
 * Starts a new run whose history up to `fromStep` is run `runId`'s (see
 * docs/protocol.md, "Forks"): its checkpoints 0 to `fromStep` and the call
 * records they count (at the latest step, every record stored: the round a
 * recovery would go on with), and the inbox events they took, each verified
 * and sealed again under the new id, in a chain of its own; then a claim
 * (`fromStep` + 1) with `program`'s data, the mark `forkedFrom` and the
 * operator's, left for a worker serving the run's name (released; paused if
 * that step was). Its finished calls replay, its calls in doubt stay in
 * doubt, and its stream starts empty. The original is only read. A step past
 * the latest, or one that ended the run, is `InvalidInput`, and a store
 * without history too; a taken id is `CheckpointConflict`, and the latest step of a run a drive holds `LeaseHeld`: nothing written.
 * A copy that fails on its way is deleted.
 */
export async function forkRun(runId: string, options: ForkOptions): Promise<ForkedRun> {
  const at = acting("fork", "forkRun", options, FORK_OPTIONS);
  const { fromStep, reason } = options;
  if (!isCount(fromStep))
    throw new InvalidInput(`forkRun: fromStep must be a whole number ≥ 0, not ${String(fromStep)}.`);
  if (reason !== undefined) assertReason("forkRun", reason);
  const forkId = assertRunId(options.runId ?? newRunId());
  const version = options.version === null ? null : checkRunVersion("forkRun", options.version);
  const { from, envelope, bodies, records, events } = await readOriginal(at, runId, fromStep);
  const program = await forkedProgram(options.program, envelope.program);
  // A fork is no child: its end is told to no parent. It is a run of its own, in a trace of its own (started here).
  const { parent: _parent, version: originals, trace: _trace, ...own } = envelope;
  // The version given (null: none), or the original's.
  const kept = version === undefined ? originals : (version ?? undefined);
  const trace = traceStart({ runId: forkId, kind: from.kind, name: from.name, version: kept });
  const forked: RunEnvelope = {
    ...own,
    program,
    forkedFrom: { runId, step: fromStep, segment: from.segment + 1 },
    ...(kept === undefined ? {} : { version: kept }),
    ...(trace === undefined ? {} : { trace }),
  };
  const { store, sealer } = at;
  const changes = { on: true, snapshotEvery: options.snapshotEvery };
  const lease = driveLease(at.lease);
  const writer = new RunWriter(store, forkId);
  let landed = false;
  const copied = copyHistory(writer, sealer, forkId, { bodies, records, changes, lease }, () => {
    landed = true;
  });
  try {
    await writer.flush();
    for (const event of events) {
      const sealed = sealEvent(sealer, forkId, event);
      await eventStore("forkRun", store).sendEvent(forkId, { seq: event.seq, key: event.key, sealed });
    }
    const step = fromStep + 1;
    const { chain: _chain, ...last } = copied.last;
    const { row } = sealNext(
      sealer,
      {
        ...last,
        step,
        status: from.status === "paused" ? "paused" : "running",
        segment: from.segment + 1,
        calls: [...copied.counts, 0],
        data: { ...envelopeJson(forked), ...mark(at, reason) },
      },
      copied.last,
      changes,
    );
    // Released with the claim: a worker serving the run's name takes the fork from here.
    await writer.write({ kind: "save", step, row, lease: { owner: lease.owner, ms: 0 } }, true);
    return { runId: forkId, step };
  } catch (error) {
    await dropHalfFork(store, forkId, landed, lease.owner);
    throw error;
  }
}

/**
 * Half a history is no fork: deletes what a copy that failed wrote, once its
 * step 0 landed, or when the fork's lease is the copy's (a step 0 whose reply
 * was lost). A taken id's run is another's, and stays.
 */
async function dropHalfFork(store: CheckpointStore, forkId: string, landed: boolean, owner: string): Promise<void> {
  try {
    if (landed || (await store.leaseOf(forkId))?.owner === owner) await store.delete(forkId);
  } catch {
    // The store failed the copy, and fails this too: the error thrown is the copy's.
  }
}

/** What a fork takes of the original, read and verified before anything is written. */
interface Original {
  /** The original's row at `fromStep`, and every row up to it, with their whole data. */
  readonly from: CheckpointBody;
  readonly envelope: RunEnvelope;
  readonly bodies: readonly CheckpointBody[];
  readonly records: readonly CallRecord[];
  readonly events: readonly InboxEvent[];
}

/**
 * Reads and verifies what the fork takes: every row up to `fromStep` (each
 * signature and link), the call log, and the events its history took. A step
 * past the latest, or one that ended the run, is `InvalidInput`.
 */
async function readOriginal(at: Acting, runId: string, fromStep: number): Promise<Original> {
  const { store, sealer } = at;
  if (typeof store.history !== "function")
    throw new InvalidInput(
      "forkRun: this store has no inspection capability (listRuns and history): a fork copies a run's checkpoints, which only history reads.",
    );
  const latest = await latestSeen(at, runId);
  if (fromStep > latest.step)
    throw new InvalidInput(`forkRun: step ${fromStep} is past run ${runId}'s latest step (${latest.step}).`);
  const rows = (await store.history(runId)).filter((row) => row.step <= fromStep);
  const bodies = openHistory(sealer, runId, rows);
  const from = bodies[fromStep];
  if (bodies.length !== fromStep + 1 || bodies[0]?.step !== 0 || from === undefined)
    throw new CheckpointStoreCorrupt(runId, `its history does not hold its steps 0 to ${fromStep}.`);
  const atLatest = from.step === latest.step;
  if (atLatest && from.chain?.digest !== latest.chain?.digest)
    throw new CheckpointStoreCorrupt(runId, `its history's step ${fromStep} is not its latest checkpoint.`);
  if (isEnded(from.status))
    throw new InvalidInput(
      `forkRun: step ${fromStep} of run ${runId} ended it (${from.status}): fork from an earlier step.`,
    );
  if (atLatest && from.status === "running") await refuseLiveDrive(store, runId);
  const log = await readCallLog(store, sealer, runId, from.calls);
  // At the latest step, the records after those it counts are of the round a recovery would go on with: they
  // are its history too. Only while it is the latest: a round the run went on with is the fork's to run again.
  const records = atLatest ? log : log.filter((record) => record.seq < (from.calls[record.segment] ?? 0));
  if (atLatest && (await store.latest(runId)).sealed !== rows[fromStep]?.sealed)
    throw new CheckpointConflict(runId, `the run went on past step ${fromStep} while it was read: fork it again.`);
  const envelope = readEnvelope(runId, from.data);
  const events = await takenEvents(store, at, runId, envelope.taken, records);
  return { from, envelope, bodies, records, events };
}

/**
 * Refuses a fork from the latest step of a run a drive holds (`LeaseHeld`):
 * its records still land after the fork read the log, and the fork would make
 * those calls afresh. A sleep's or a wait's lease is no drive's.
 */
async function refuseLiveDrive(store: CheckpointStore, runId: string): Promise<void> {
  const lease = await store.leaseOf(runId);
  if (lease !== undefined && lease.expiresAt > lease.now && !isAsleepOwner(lease.owner))
    throw new LeaseHeld(runId, lease.owner, lease.expiresAt, lease.now);
}

/**
 * The first events of the original's inbox, through the last one its history
 * took (the first `taken[name]` of each name, and those the copied waits
 * took): the fork's waits replay them, and take the ones after them anew.
 */
async function takenEvents(
  store: CheckpointStore,
  at: Acting,
  runId: string,
  taken: Readonly<Record<string, number>> | undefined,
  records: readonly CallRecord[],
): Promise<InboxEvent[]> {
  let through = -1;
  for (const { tool, kind, result } of records)
    if (tool === EVENT_TOOL && kind === "done" && isJsonObject(result) && isCount(result["seq"]))
      through = Math.max(through, result["seq"]);
  const names = Object.entries(taken ?? {}).filter(([, count]) => count > 0);
  if (through < 0 && names.length === 0) return [];
  const inbox = await readInbox(eventStore("forkRun", store), at.sealer, runId);
  for (const [name, count] of names)
    through = Math.max(through, inbox.filter((event) => event.name === name)[count - 1]?.seq ?? inbox.length);
  if (through >= inbox.length)
    throw new CheckpointStoreCorrupt(runId, "its inbox holds fewer events than its history took: events were deleted.");
  return inbox.slice(0, through + 1);
}

/** The fork's program data: `change` of the original's, checked to be a plain JSON object. */
async function forkedProgram(change: ForkOptions["program"], program: JsonObject): Promise<JsonObject> {
  if (change === undefined) return program;
  // A copy: the original's is sealed again as it was.
  const given = await change(canonicalCopy(program) as JsonObject);
  const changed = canonicalCopy(given, "forkRun: the fork's program data");
  if (!isJsonObject(changed)) throw new InvalidInput("forkRun: program must give the fork's program data, an object.");
  return changed;
}
