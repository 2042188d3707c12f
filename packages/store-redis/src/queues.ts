import {
  CheckpointConflict,
  isAsleepOwner,
  isStart,
  QueueFull,
  type QueuedRun,
  type QueuePlace,
  queueRefusal,
} from "@durable/core/store";
import { bucketOf, hex, queueKeys, queueScriptKeys, runKeys, unhex } from "./keys.js";
import { demandOf, type Needs, placeJson, placeOr, type QueueOutcome, numberText, slotted } from "./queue-replies.js";
import type { Evaluate } from "./listing.js";
import { SCRIPTS } from "./scripts.js";

/*
 * The queues capability (see docs/protocol.md, "Queues"). A queue's state is
 * under its own hash tag, a run's under its bucket's, and no script may touch
 * two slots of a cluster: so a write of a queued run is two steps, the
 * queue's part first and the run's after, each one atomic script.
 *
 * - Reservations. Before a write that takes a slot or extends a drive's
 *   lease, the queue script (PREP) reserves a slot for the run and owner
 *   until the queue's now + the lease + `clockSkewMs`, refusing it
 *   (`QueueFull`) while the queue's OTHER runs with a live reservation reach
 *   a limit; the run's script then sets the lease, cut to end `clockSkewMs`
 *   before the reservation. A write that releases a drive's lease (ended,
 *   paused, asleep, waiting, a decision, `release`, `delete`) drops its
 *   reservation after it; a write that did not use one drops it too. So the
 *   reservations cover every run of the queue that holds a slot, at all
 *   times: a worker that dies leaves one that runs out `clockSkewMs` after
 *   its lease, and a limit can only be kept too well for a moment, never
 *   passed, as long as the masters' clocks differ by less than `clockSkewMs`.
 * - Starts are recorded by PREP with the reservation (a start its write did
 *   not use is dropped after).
 * - The ready index holds every run of the queue that is running and waits
 *   for no decision (held, asleep, waiting, free), in the queue's order:
 *   added before a write that leaves a run so while it was out of the index
 *   (step 0, a resume, a decision's claim, a retry), for that write's step;
 *   dropped after one that leaves it paused, ended or waiting for a
 *   decision, unless it was added since for a later step. `listQueued` reads
 *   it a page at a time and checks each run's state in its bucket (one
 *   script per bucket and page), so it lists what is claimable now, whatever
 *   the index holds besides.
 *
 * The run's script tells what it needs (`{"queue", …}`, writing nothing),
 * and the write is sent again with it: what a write of a run needs is known
 * only from its stored state. This store object remembers the place of
 * runs it wrote or listed, to prepare a claim, a start or a renewal before
 * its first attempt.
 */

/** Attempts of one write before it gives up, while its run changes under it. */
const ATTEMPTS = 4;
/** How many runs' places one store object remembers. */
const KNOWN = 10_000;
/** Members of the ready index read per page of `listQueued`. */
const PAGE = 100;
/** Priorities run from -MAX to MAX; the index orders by MAX - priority, on 10 digits. */
const MAX_PRIORITY = 2 ** 31 - 1;

/** A write of a run, as its queue sees it: a save (with `step`) or a renewal. */
export interface QueueWrite {
  readonly runId: string;
  /** The save's step; undefined for `renew`. */
  readonly step?: number;
  /** The place the save's row gives: a step 0's is the run's, a later one's only a hint. */
  readonly place?: QueuePlace | undefined;
  /** The lease it asks for (`ms` 0: none). */
  readonly owner: string;
  readonly ms: number;
  /** True when it leaves `owner` holding the run's lease if accepted (a running save that leases, a renewal). */
  readonly holds: boolean;
}

/** What one write brought from its queue so far. */
interface Prepared {
  readonly place: QueuePlace;
  readonly reserved?: { readonly until: string; readonly fresh: boolean };
  readonly start?: string;
  /** The run's place in the ready index, added for the write's step. */
  readonly add?: { readonly step: string; readonly member: string };
}

/** The queue side of a `RedisCheckpointStore`: the run's scripts are the store's, given to each call. */
export class Queues {
  readonly #prefix: string;
  readonly #skewMs: number;
  readonly #known = new Map<string, { readonly place: QueuePlace; readonly holder: string | undefined }>();

  constructor(prefix: string, skewMs: number) {
    this.#prefix = prefix;
    this.#skewMs = skewMs;
  }

  /**
   * Sends a write through `run` (given the queue terms, the write script's
   * or the renew script's), bringing what it needs from the run's queue
   * first, and after it gives back what it no longer needs. `outcome` reads
   * the script's reply. A write that failed otherwise (Redis did not answer)
   * undoes nothing: what it reserved runs out by itself.
   */
  async write(
    op: QueueWrite,
    evaluate: Evaluate,
    run: (terms: string[]) => Promise<unknown>,
    outcome: (reply: unknown) => QueueOutcome | undefined,
  ): Promise<unknown> {
    let prepared = await this.#guess(op, evaluate);
    for (let attempt = 1; ; attempt++) {
      const reply = await run(this.#terms(op, prepared));
      const demand = demandOf(op.runId, reply);
      if (demand === undefined) {
        const done = outcome(reply);
        await this.#settle(op.runId, evaluate, op, prepared, done);
        this.#remember(op.runId, done?.place, op.holds ? op.owner : undefined);
        return reply;
      }
      if (prepared !== undefined && prepared.place.queue !== demand.place.queue) {
        await this.#settle(op.runId, evaluate, op, prepared, undefined);
        prepared = undefined;
      }
      if (attempt === ATTEMPTS) {
        await this.#settle(op.runId, evaluate, op, prepared, undefined);
        throw new CheckpointConflict(
          op.runId,
          "the run changed each time its queue's slot was prepared: read it again.",
        );
      }
      const got = await this.#prep(op, evaluate, demand.place, demand.needs, demand.member, prepared);
      if (got instanceof QueueFull) {
        await this.#settle(op.runId, evaluate, op, prepared, undefined);
        throw got;
      }
      prepared = got;
    }
  }

  /** After `release` or `delete` (their script's reply): drops the reservation and the index entry they made needless. */
  async released(runId: string, evaluate: Evaluate, reply: unknown, deleted: boolean): Promise<void> {
    if (deleted) this.#known.delete(runId);
    else this.#remember(runId, this.#known.get(runId)?.place, undefined);
    const [, text, owner, unindex] = reply as string[];
    const place = text === undefined ? undefined : placeOr(text);
    if (place !== undefined) await this.#drop(evaluate, runId, place, { pairs: owner ? [owner, ""] : [], unindex });
  }

  /**
   * The claimable runs of `queue` in its order: its ready index a page at a
   * time, each run checked in its bucket by that node's clock. Reads only.
   */
  async *list(queue: string, evaluate: Evaluate): AsyncIterable<QueuedRun> {
    const keys = queueKeys(this.#prefix, queue);
    for (let after = ""; ; ) {
      const members = (await evaluate(SCRIPTS.queuePage, [keys.ready], [after, String(PAGE)])) as string[];
      const byBucket = new Map<number, { runId: string; member: string }[]>();
      for (const member of members) {
        const runId = unhex(member.split(":")[2] ?? "");
        const bucket = bucketOf(runId);
        byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), { runId, member }]);
      }
      const found = new Map<string, QueuedRun>();
      await Promise.all(
        [...byBucket.values()].map(async (runs) => {
          const metas = runs.map(({ runId }) => runKeys(this.#prefix, runId).meta);
          const args = [hex(queue), ...runs.map(({ member }) => member)];
          const heads = (await evaluate(SCRIPTS.queueCheck, metas, args)) as ([string, string] | null)[];
          runs.forEach(({ runId, member }, i) => {
            const head = heads[i];
            if (!head) return;
            const place = placeOr(head[1]);
            found.set(member, { runId, name: head[0], ...(place?.key === undefined ? {} : { key: place.key }) });
            this.#remember(runId, place, undefined);
          });
        }),
      );
      for (const member of members) {
        const run = found.get(member);
        if (run !== undefined) yield run;
      }
      if (members.length < PAGE) return;
      after = members.at(-1) ?? "";
    }
  }

  /** Prepares before the first attempt what the write surely needs, from the place it knows; nothing when a guess is refused. */
  async #guess(op: QueueWrite, evaluate: Evaluate): Promise<Prepared | undefined> {
    const known = this.#known.get(op.runId);
    const place = op.step === 0 ? op.place : (known?.place ?? op.place);
    if (place === undefined) return undefined;
    const leases = op.ms > 0 && op.owner !== "" && !isAsleepOwner(op.owner) && op.holds;
    const takes = leases && (op.step === undefined || op.step === 0 || known?.holder !== op.owner);
    const needs = {
      slot: takes && slotted(place),
      start: takes && place.rate !== undefined && op.step !== undefined && isStart(op.step),
      add: op.step === 0,
    };
    if (!needs.slot && !needs.start && !needs.add) return undefined;
    const got = await this.#prep(op, evaluate, place, needs, "", undefined);
    return got instanceof QueueFull ? undefined : got;
  }

  /** Brings what `needs` asks from the queue of `place` (PREP), added to what the write brought before. */
  async #prep(
    op: QueueWrite,
    evaluate: Evaluate,
    place: QueuePlace,
    needs: Needs,
    member: string,
    before: Prepared | undefined,
  ): Promise<Prepared | QueueFull> {
    const keyed = place.key !== undefined && place.perKey !== undefined;
    const priority = String(MAX_PRIORITY - place.priority).padStart(10, "0");
    const args = [
      hex(op.runId),
      op.owner,
      String(op.ms),
      String(this.#skewMs),
      needs.slot ? "1" : "",
      needs.start ? "1" : "",
      numberText(place.concurrency),
      numberText(place.perKey),
      numberText(place.rate?.limit),
      numberText(place.rate?.windowMs),
      needs.add ? "1" : "",
      priority,
      member,
      keyed ? "1" : "",
      String(op.step ?? 0),
    ];
    const keys = queueScriptKeys(queueKeys(this.#prefix, place.queue, keyed ? place.key : undefined));
    const reply = (await evaluate(SCRIPTS.queuePrep, keys, args)) as string[];
    if (reply[0] === "full") {
      const [held, heldByKey, starts, earliest, now] = reply.slice(1).map(Number) as number[];
      const counts = {
        held: held ?? 0,
        heldByKey: heldByKey ?? 0,
        starts: starts ?? 0,
        earliestStart: reply[4] === "" ? undefined : earliest,
      };
      return (
        queueRefusal(op.runId, place, counts, needs.start, now ?? 0) ??
        new QueueFull(op.runId, place.queue, "concurrency")
      );
    }
    const [, until = "", fresh, start = "", at = ""] = reply;
    return {
      place,
      ...(needs.slot
        ? { reserved: { until, fresh: fresh === "1" || before?.reserved?.fresh === true } }
        : before?.reserved && { reserved: before.reserved }),
      ...(needs.start ? { start } : before?.start !== undefined && { start: before.start }),
      ...(needs.add ? { add: { step: String(op.step ?? 0), member: at } } : before?.add && { add: before.add }),
    };
  }

  /** The queue terms of the run's scripts: queue, reserved until, skew, start, add, member, and a step 0's place and flags. */
  #terms(op: QueueWrite, prepared: Prepared | undefined): string[] {
    const first = op.step === 0 ? op.place : undefined;
    const place = prepared?.place ?? first;
    return [
      place === undefined ? "" : hex(place.queue),
      prepared?.reserved?.until ?? "",
      String(this.#skewMs),
      prepared?.start ?? "",
      prepared?.add?.step ?? "",
      prepared?.add?.member ?? "",
      first === undefined ? "" : placeJson(first),
      first === undefined ? "" : `${slotted(first) ? "s" : ""}${first.rate === undefined ? "" : "r"}`,
    ];
  }

  /**
   * After a write's last attempt: gives back what it brought and did not
   * use (done undefined: all of it), then what the write made needless.
   * Best effort: what a failure leaves runs out (a reservation, a start) or
   * is skipped by `listQueued` (an index entry).
   */
  async #settle(
    runId: string,
    evaluate: Evaluate,
    op: QueueWrite,
    prepared: Prepared | undefined,
    done: QueueOutcome | undefined,
  ): Promise<void> {
    const same = done !== undefined && prepared !== undefined && done.place.queue === prepared.place.queue;
    if (prepared !== undefined) {
      // An add the write did not use is left: its run's next write out of the index drops it, and listings skip it.
      const { reserved, start } = prepared;
      const unused = {
        pairs: reserved?.fresh === true && !(same && done.slot) ? [op.owner, reserved.until] : [],
        start: start !== undefined && !(same && done.start) ? start : "",
      };
      if (same) {
        const pairs = done.drop === "" ? unused.pairs : [done.drop, "", ...unused.pairs];
        return this.#drop(evaluate, runId, done.place, { ...unused, pairs, unindex: done.unindex });
      }
      await this.#drop(evaluate, runId, prepared.place, unused);
    }
    if (done !== undefined)
      await this.#drop(evaluate, runId, done.place, {
        pairs: done.drop === "" ? [] : [done.drop, ""],
        unindex: done.unindex,
      });
  }

  /** One DROP script on the queue of `place`, unless it has nothing to do; its failure is left (see `#settle`). */
  async #drop(
    evaluate: Evaluate,
    runId: string,
    place: QueuePlace,
    what: { pairs: string[]; start?: string; unindex?: string },
  ): Promise<void> {
    const { pairs, start = "", unindex = "" } = what;
    if (pairs.length === 0 && start === "" && unindex === "") return;
    const keyed = place.key !== undefined && place.perKey !== undefined;
    const keys = queueScriptKeys(queueKeys(this.#prefix, place.queue, keyed ? place.key : undefined));
    await evaluate(SCRIPTS.queueDrop, keys, [hex(runId), start, unindex, ...pairs]).catch(() => undefined);
  }

  /** Keeps what this store object knows of a run's queue (a bounded map: the oldest is forgotten first). */
  #remember(runId: string, place: QueuePlace | undefined, holder: string | undefined): void {
    if (place === undefined) return;
    this.#known.delete(runId);
    this.#known.set(runId, { place, holder });
    if (this.#known.size > KNOWN) this.#known.delete(this.#known.keys().next().value as string);
  }
}
