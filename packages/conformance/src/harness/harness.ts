import { type JsonValue, newRunId } from "@durable/core";
import type { CheckpointRow, CheckpointStore, QueuePlace, RunKind, RunStatus } from "@durable/core/store";
import { type CallRecord, sealCheckpoint, Sealer, type SegmentCounts } from "@durable/core/runner";
import type { ConformanceInitializer, RawAccess } from "./initializer.js";

/** The key the kit seals with. Stores never see keys; any 32 bytes do. */
export const KIT_KEY = "durable-conformance-kit-key-0123456789";

/** The key the kit encrypts its encrypted runs with (see `isEncryptedRun`). */
export const KIT_ENCRYPTION_KEY = "durable-conformance-kit-encryption-key-0123456789";

/** What a run id starts with when the kit's runners encrypt the run: every group drives some of each. */
const ENCRYPTED = "encrypted-";

/** True for a run the kit's runners encrypt: the choice travels with the id, to every worker process. */
export function isEncryptedRun(runId: string): boolean {
  return runId.startsWith(ENCRYPTED);
}

/** What a test changes of a checkpoint row it saves. */
export interface RowOptions {
  readonly status?: RunStatus;
  readonly segment?: number;
  readonly name?: string;
  readonly kind?: RunKind;
  readonly data?: JsonValue;
  /** How many call records the checkpoint counts in each segment (default none). */
  readonly calls?: SegmentCounts;
  /** The run's queue place, as a queued run's rows carry it. */
  readonly queue?: QueuePlace;
}

/**
 * One test's view of the store under test: the store, real sealed rows to save
 * into it, unique run ids, and the stores it opened, disposed of at the end.
 */
export class Harness {
  readonly init: ConformanceInitializer;
  readonly sealer: Sealer = Sealer.withKeys(KIT_KEY);
  store: CheckpointStore;
  readonly #opened: CheckpointStore[];

  private constructor(init: ConformanceInitializer, store: CheckpointStore) {
    this.init = init;
    this.store = store;
    this.#opened = [store];
  }

  static async open(init: ConformanceInitializer): Promise<Harness> {
    return new Harness(init, await init.createStore());
  }

  /** The raw-access oracle for the current store. */
  get raw(): RawAccess {
    if (this.init.raw === undefined) throw new Error("this test needs the initializer's `raw` oracle");
    return this.init.raw(this.store);
  }

  /** A run id no other test uses; with `encrypted`, one the kit's runners encrypt. */
  runId(label = "run", encrypted = false): string {
    return `${encrypted ? ENCRYPTED : ""}${label}-${newRunId()}`;
  }

  /** A checkpoint row sealed as core seals it. */
  row(runId: string, step: number, options: RowOptions = {}): CheckpointRow {
    return kitRow(this.sealer, runId, step, options);
  }

  /** Saves steps 0…last of a run. */
  async saveSteps(
    runId: string,
    last: number,
    options: RowOptions = {},
    store: CheckpointStore = this.store,
  ): Promise<void> {
    for (let step = 0; step <= last; step++) await store.save(runId, step, this.row(runId, step, options));
  }

  /** A call record sealed as core seals it. */
  call(runId: string, segment: number, seq: number, extra: Partial<CallRecord> = {}): string {
    return kitCall(this.sealer, runId, segment, seq, extra);
  }

  /** Appends records seq `from`…`to` - 1 of a segment, one after another. */
  async recordCalls(
    runId: string,
    segment: number,
    from: number,
    to: number,
    store: CheckpointStore = this.store,
  ): Promise<void> {
    for (let seq = from; seq < to; seq++) await store.recordCall(runId, segment, seq, this.call(runId, segment, seq));
  }

  /** Another store from the initializer, isolated from this one; disposed of with the test. */
  async otherStore(): Promise<CheckpointStore> {
    const store = await this.init.createStore();
    this.#opened.push(store);
    return store;
  }

  /** Another client of the current store's data (the `connect` capability); disposed of with the test. */
  async connect(): Promise<CheckpointStore> {
    const connect = this.init.capabilities?.connect;
    if (connect === undefined) throw new Error("this test needs the `connect` capability");
    const store = await connect(this.store);
    this.#opened.push(store);
    return store;
  }

  /** Closes the store and opens it again on the same data, as a restarted worker would. */
  async reopen(): Promise<void> {
    const next = await this.connect();
    await this.store.close();
    this.#opened.splice(this.#opened.indexOf(this.store), 1);
    this.store = next;
  }

  /** Disposes of every store the test opened. */
  async dispose(): Promise<void> {
    const stores = [...new Set(this.#opened)];
    for (const store of stores) {
      if (this.init.destroyStore !== undefined) await this.init.destroyStore(store);
      else await store.close();
    }
  }
}

/** A checkpoint row of the kit's, sealed as core seals it. */
export function kitRow(sealer: Sealer, runId: string, step: number, options: RowOptions = {}): CheckpointRow {
  const row = sealCheckpoint(sealer, {
    runId,
    step,
    status: options.status ?? "running",
    segment: options.segment ?? 0,
    name: options.name ?? "conformance",
    kind: options.kind ?? "flow",
    identity: { user: "kit" },
    calls: Array.from({ length: (options.segment ?? 0) + 1 }, (_, s) => options.calls?.[s] ?? 0),
    data: options.data ?? { step },
  });
  return options.queue === undefined ? row : { ...row, queue: options.queue };
}

/** A call record of the kit's, sealed as core seals it. */
export function kitCall(
  sealer: Sealer,
  runId: string,
  segment: number,
  seq: number,
  extra: Partial<CallRecord> = {},
): string {
  const record: CallRecord = {
    runId,
    segment,
    seq,
    round: 1,
    callId: `call-${seq}`,
    tool: "conformance_tool",
    kind: "started",
    args: { seq },
    ...extra,
  };
  return sealer.seal("call", record);
}
