import type { JsonValue } from "../base/json.js";
import { CallLog, readCallLog, type CallRecord } from "../log/call-log.js";
import type { SegmentCounts } from "../store/contract.js";
import type { CheckpointBody } from "../seal/checkpoint.js";
import { readLatest, sealNext } from "../seal/chain.js";
import { CheckpointConflict, CheckpointNotFound, CheckpointStoreCorrupt } from "../base/errors.js";
import { ASLEEP, saveRefusal, WAITING } from "../store/rules.js";
import type { Identity } from "../base/identity.js";
import { faultPoint } from "../base/fault-points.js";
import { deepFreeze } from "../base/freeze.js";
import { assertRunId, assertRunName } from "../base/names.js";
import type { Sealer } from "../seal/sealer.js";
import { driveLease, LeaseKeeper, leaseTerms } from "./lease.js";
import { RunWriter } from "../log/run-writer.js";
import { eventStore, type InboxEvent, readInbox } from "../log/inbox.js";
import { StreamWriter, type StreamTerms, tellNews } from "../log/run-stream.js";
import { streamLength, streamStore } from "../log/stream-read.js";
import type {
  CheckpointRow,
  CheckpointStore,
  LeaseClaim,
  LeaseTerms,
  QueuePlace,
  RunKind,
  RunStatus,
} from "../store/contract.js";
import type { ClaimOptions, RunStart } from "./run-start.js";

export type { ClaimOptions, RunStart };

/**
 * One worker's hold on a run: the step it saved last, its call-log segment, and
 * the log it writes. Runners build on it; every save is a compare-and-set, so a
 * worker that lost the run gets `CheckpointConflict` at its next write.
 */
export class DurableRun {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  readonly runId: string;
  readonly name: string;
  readonly kind: RunKind;
  readonly identity: Identity;
  readonly log: CallLog;
  /** This drive's lease: its own owner, so no other drive, of this process or another, claims the run while it is live. */
  readonly lease: LeaseTerms;
  readonly #keeper: LeaseKeeper;
  readonly #writer: RunWriter;
  readonly #stop = new AbortController();
  /** Rows are sealed as changes of the one before when the store reads ranged history; a snapshot after at most `snapshotEvery`. */
  readonly #changes: { readonly on: boolean; readonly snapshotEvery?: number | undefined };
  /** What step 0 gives the store besides its row: the run's queue place. */
  readonly #queuePlace: QueuePlace | undefined;
  #step: number;
  /** The body this drive sealed last (or claimed from): the next row follows it in the chain. */
  #last: CheckpointBody | undefined;
  /** The run's stream as this drive writes it; undefined when it does not. */
  #stream: StreamWriter | undefined;
  /** What the rows of a drive that writes no stream seal as `streamed`: the claimed row's. */
  #streamed: number | undefined;

  private constructor(init: RunStart, step: number, segment: number, earlier: SegmentCounts, last?: CheckpointBody) {
    this.store = init.store;
    this.sealer = init.sealer;
    this.runId = init.runId;
    this.name = init.name;
    this.kind = init.kind;
    this.identity = init.identity;
    this.#writer = new RunWriter(init.store, init.runId);
    this.log = new CallLog(this.#writer, init.sealer, init.runId, segment, earlier);
    this.lease = driveLease(init.lease ?? leaseTerms("DurableRun", undefined));
    this.#keeper = new LeaseKeeper(
      init.store,
      init.runId,
      this.lease,
      () => this.segment,
      (lost) => this.#stop.abort(lost),
    );
    this.#step = step;
    this.#last = last;
    this.#streamed = last?.streamed;
    this.#changes = { on: init.store.history !== undefined, snapshotEvery: init.snapshotEvery };
    this.#queuePlace = init.queue;
  }

  /** The step of the checkpoint this worker saved last. */
  get step(): number {
    return this.#step;
  }

  /**
   * Aborted when this drive must stop: its worker gave the run up (`giveUp`), or it lost the run (its lease renewal
   * was refused, or a cancel made in this process took it), with `CheckpointConflict`. Its calls' tools get it as
   * `ctx.signal`: no call starts after it, and the drive saves nothing more.
   */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** The call-log segment this worker writes. */
  get segment(): number {
    return this.log.segment;
  }

  /** Saves step 0 of a new run (`CheckpointConflict` if the run id is taken). State that is not plain JSON is `InvalidInput`. */
  static async start(init: RunStart): Promise<{ run: DurableRun; checkpoint: CheckpointBody }> {
    const { run, checkpoint, landed } = DurableRun.startLater(init);
    void run.flush().catch(() => undefined);
    await landed;
    faultPoint("checkpoint.after-save");
    return { run, checkpoint };
  }

  /**
   * Queues step 0 of a new run, to land with the run's first commit (its first call's `started`, or a save that must
   * land), where a run id that is taken is `CheckpointConflict`. State that is not plain JSON is `InvalidInput` at once.
   */
  static startLater(
    init: RunStart,
    onLanded?: (checkpoint: CheckpointBody) => void,
  ): { run: DurableRun; checkpoint: CheckpointBody; landed: Promise<void> } {
    assertRunId(init.runId);
    assertRunName(init.name);
    const run = new DurableRun(init, -1, 0, []);
    // A run left to the fleet takes no lease with its step 0: a worker claims it at once.
    const hold = init.leased === false ? { owner: run.lease.owner, ms: 0 } : undefined;
    // Step 0 of a run that streams counts no part: its stream starts after it lands.
    if (init.stream !== undefined) run.#streamed = 0;
    const { body, landed } = run.#queue(0, "running", init.data, false, false, () => onLanded?.(body), hold);
    if (init.stream !== undefined) run.#openStream(init.stream, 0);
    return { run, checkpoint: body, landed };
  }

  /** The run's latest checkpoint, verified, with its whole data (rebuilt from its snapshot and the changes after it). */
  static async latest(store: CheckpointStore, sealer: Sealer, runId: string): Promise<CheckpointBody> {
    assertRunId(runId);
    return readLatest(store, sealer, runId);
  }

  /**
   * Claims a run from its latest checkpoint: saves the next step with a new call-log segment (of two racing workers
   * one wins, the other gets `CheckpointConflict`), then reads the whole call log. Reading after the claim matters:
   * the fenced worker can add no record once the claim is stored. A run another worker holds is `LeaseHeld`, unless
   * `takeOver`.
   */
  static async claim(
    store: CheckpointStore,
    sealer: Sealer,
    latest: CheckpointBody,
    options: ClaimOptions = {},
  ): Promise<{ run: DurableRun; checkpoint: CheckpointBody; records: CallRecord[] }> {
    const init: RunStart = { ...latest, store, sealer, lease: options.lease, snapshotEvery: options.snapshotEvery };
    const run = new DurableRun(init, latest.step, latest.segment + 1, latest.calls, latest);
    const { takeOver } = options;
    const hold =
      options.leased === false ? { owner: run.lease.owner, ms: 0, ...(takeOver ? { takeOver } : {}) } : undefined;
    const status = options.paused === true ? "paused" : "running";
    const checkpoint = await run.#write(latest.step + 1, status, options.data ?? latest.data, takeOver, hold);
    faultPoint("claim.before-log-read");
    try {
      if (options.stream !== undefined) await run.#claimStream(options.stream, latest.streamed ?? 0);
      const records = await readCallLog(store, sealer, latest.runId, latest.calls, options.callsFrom);
      run.log.learn(records);
      return { run, checkpoint, records };
    } catch (error) {
      // The claim holds the run, but this worker cannot go on with it: give it up for another.
      await run.stopLease(true);
      throw error;
    }
  }

  /**
   * Ends a run from its latest checkpoint in one save (a cancel): the next
   * step, `failed` with `data`, with a new segment, so whoever held the run is
   * fenced. It takes no lease on its way, so it is never a take of the run's
   * queue: a full queue, or one out of rate, does not refuse it.
   */
  static async end(
    store: CheckpointStore,
    sealer: Sealer,
    latest: CheckpointBody,
    options: { readonly lease?: LeaseTerms | undefined; readonly takeOver?: boolean; readonly data: JsonValue },
  ): Promise<CheckpointBody> {
    const init: RunStart = { ...latest, store, sealer, lease: options.lease };
    const run = new DurableRun(init, latest.step, latest.segment + 1, latest.calls, latest);
    return run.#write(latest.step + 1, "failed", options.data, options.takeOver);
  }

  /** The run's stream as this drive writes it (`RunStart.stream`), or undefined. */
  get stream(): StreamWriter | undefined {
    return this.#stream;
  }

  /** Starts writing the stream at `length`: its first part says which attempt (segment) the parts after it are. */
  #openStream(terms: StreamTerms, length: number, abandons?: { from: number; to: number }): void {
    this.#stream = new StreamWriter(this, this.#writer, terms, () => this.segment, length);
    this.#stream.write({ type: "attempt", attempt: this.segment, ...(abandons === undefined ? {} : { abandons }) });
  }

  /**
   * After a claim landed (no part of the segment it fenced lands after it):
   * the parts past `streamed`, the latest checkpoint's count, were streamed
   * by a drive that was cut off before it saved them, and the new attempt says so.
   */
  async #claimStream(terms: StreamTerms, streamed: number): Promise<void> {
    const length = await streamLength(streamStore("stream", this.store), this.runId, streamed);
    this.#openStream(terms, length, length > streamed ? { from: streamed, to: length } : undefined);
  }

  /** Saves the next step with this worker's segment; resolves once it landed. */
  save(status: RunStatus, data: JsonValue): Promise<CheckpointBody> {
    return this.#write(this.#step + 1, status, data);
  }

  /**
   * Saves the next step `running` with `data`, waiting for a decision (`CheckpointRow.waitsForDecision`): its lease
   * is released with it, and the store leaves the run out of claimable listings until a decision claims it, so idle
   * workers do not read it again and again.
   */
  async waitForDecision(data: JsonValue): Promise<CheckpointBody> {
    const { body, landed } = this.#queue(this.#step + 1, "running", data, false, true, undefined, "decision");
    await landed;
    return body;
  }

  /** The run's inbox, verified (`readInbox`): `InvalidInput` when its store has no events capability. */
  inbox(): Promise<InboxEvent[]> {
    return readInbox(eventStore("waitForEvent", this.store), this.sealer, this.runId);
  }

  /**
   * Saves the next step `running` with `data`, asleep for `ms`: the store holds the run's lease for the sleep (owner
   * `ASLEEP`) until its now + `ms`, so no worker claims it before then, and any claims it after, as the run of a
   * worker that died. With `events` (how many events of its inbox the round read), the run waits for an event too:
   * the lease is `WAITING`'s, which the next event sent releases (and a save that has not seen every event takes
   * none). This drive stops keeping its own lease first.
   */
  async sleep(data: JsonValue, ms: number, events?: number): Promise<CheckpointBody> {
    await this.#keeper.stop(false);
    const hold = events === undefined ? { owner: ASLEEP, ms } : { owner: WAITING, ms, events };
    const { body, landed } = this.#queue(this.#step + 1, "running", data, false, true, undefined, hold);
    await landed;
    return body;
  }

  /**
   * Queues the next running step to land with the run's next commit (the next
   * call's `started`, or a save that must land): gives it at once, with the
   * promise that it landed. A crash before then recovers from the step before.
   */
  saveLater(data: JsonValue, onLanded?: () => void): { readonly body: CheckpointBody; readonly landed: Promise<void> } {
    const queued = this.#queue(this.#step + 1, "running", data, false, false, onLanded);
    faultPoint("checkpoint.after-save");
    return queued;
  }

  /** Throws the error a commit of this run failed with, if one did: a worker cannot go on with the run then. */
  throwIfWriteFailed(): void {
    if (this.#writer.failure !== undefined) throw this.#writer.failure;
  }

  /** Commits every write still queued (a `done` record, a running step); resolves once they landed. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /**
   * Gives the run up: aborts the drive's signal (with `reason`, when given),
   * then what is still queued (finished calls' records) lands, since another
   * worker may claim the run as soon as it is released.
   */
  async giveUp(reason?: unknown): Promise<void> {
    this.#stop.abort(reason);
    this.#stream?.close();
    await this.flush().catch(() => undefined);
    await this.stopLease(true);
  }

  /** Stops keeping the lease; with `release`, the run is claimable at once (a worker that gives it up). */
  stopLease(release: boolean): Promise<void> {
    return this.#keeper.stop(release);
  }

  async #write(
    step: number,
    status: RunStatus,
    data: JsonValue,
    takeOver?: boolean,
    hold?: LeaseClaim,
  ): Promise<CheckpointBody> {
    const { body, landed } = this.#queue(step, status, data, takeOver === true, true, undefined, hold);
    await landed;
    faultPoint("checkpoint.after-save");
    return body;
  }

  #queue(
    step: number,
    status: RunStatus,
    data: JsonValue,
    takeOver: boolean,
    durable: boolean,
    onLanded?: () => void,
    hold?: "decision" | LeaseClaim,
  ): { body: CheckpointBody; landed: Promise<void> } {
    const waitsForDecision = hold === "decision";
    const { row: sealed, body } = sealNext(
      this.sealer,
      {
        runId: this.runId,
        step,
        status,
        segment: this.segment,
        name: this.name,
        kind: this.kind,
        identity: this.identity,
        calls: this.log.counts,
        streamed: this.#settleStream(status, hold),
        data,
      },
      this.#last,
      this.#changes,
    );
    // The next row holds what changed since this one, found by reference: what is sealed must not change in place.
    deepFreeze(body.data);
    this.#last = body;
    const queue = step === 0 ? this.#queuePlace : undefined;
    const row = waitsForDecision
      ? { ...sealed, waitsForDecision }
      : queue === undefined
        ? sealed
        : { ...sealed, queue };
    faultPoint("checkpoint.before-save");
    const queuedAt = performance.now();
    // A run saved waiting for a decision is saved without a lease: it is released with the save. An asleep one
    // is saved with the sleep's.
    const lease = waitsForDecision
      ? { owner: this.lease.owner, ms: 0 }
      : hold !== undefined
        ? hold
        : takeOver
          ? { ...this.lease, takeOver }
          : this.lease;
    this.#step = step;
    const streams = this.#stream !== undefined;
    const landedNow = (): void => {
      if (status === "running" && hold === undefined) this.#keeper.saved(queuedAt);
      else {
        void this.#keeper.stop(false);
        // A follower in this process learns at once that the drive stopped, not at its next poll.
        if (streams) tellNews(this.store, this.runId);
      }
      onLanded?.();
    };
    const write = { kind: "save", step, row, lease } as const;
    const landed = this.#writer.write(write, durable, landedNow).catch(async (error: unknown) => {
      // Only a refusal of this save's own batch says anything of this step; a write queued behind it just fails.
      if (error instanceof CheckpointConflict && this.#writer.refused(write)) await this.#checkRefusal(step, row);
      throw error;
    });
    // A step that waits is awaited by no one until it lands: its failure reaches the run's next write instead.
    landed.catch(() => undefined);
    return { body, landed };
  }

  /**
   * What a row seals as `streamed`: every part written before it is queued
   * ahead of it. A row that ends the drive (paused, ended, asleep, released)
   * closes the stream: a new drive writes the parts after it. A failed row
   * counts only the parts before the step that failed: that step's are void,
   * as a cut-off drive's are (a retry runs it again, and a follower marks them
   * abandoned).
   */
  #settleStream(status: RunStatus, hold: "decision" | LeaseClaim | undefined): number | undefined {
    if (this.#stream === undefined) return this.#streamed;
    const streamed = this.#stream.settle();
    if (status !== "running" || hold !== undefined) this.#stream.close();
    return status === "failed" ? (this.#last?.streamed ?? streamed) : streamed;
  }

  /**
   * A store decides refusals from its plain columns. When the sealed latest
   * checkpoint allows the save it refused, the columns were changed behind
   * the runner's back: that is corruption, not a lost race.
   */
  async #checkRefusal(step: number, row: CheckpointRow): Promise<void> {
    let head: CheckpointBody | undefined;
    try {
      // Through the chain: a change's name and kind are its columns, which are what is in question.
      head = await readLatest(this.store, this.sealer, this.runId);
    } catch (error) {
      if (!(error instanceof CheckpointNotFound)) throw error;
    }
    if (saveRefusal(this.runId, step, row, head) === undefined) {
      throw new CheckpointStoreCorrupt(
        this.runId,
        `the store refused step ${step}, which its latest sealed checkpoint (step ${head?.step ?? "none"}, ${head?.status ?? "no row"}) allows: its plain columns differ from what is sealed.`,
      );
    }
  }
}
