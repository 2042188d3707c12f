import { canonicalCopy } from "../base/canonical.js";
import { InvalidInput } from "../base/errors.js";
import { isJsonObject, type JsonObject } from "../base/json.js";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import type { Sealer } from "../seal/sealer.js";
import type { CheckpointStore } from "../store/contract.js";
import { MAX_STREAM_BATCH } from "../store/streams.js";
import type { RunWriter } from "./run-writer.js";

/** How a run's stream is written (`stream: true` takes every default). */
export interface StreamOptions {
  /** How long a part may wait in memory before its batch is appended, in ms (default 50). */
  readonly flushMs?: number;
  /** A batch is appended as soon as it holds this many parts (default 200, at most 1,000) or 64 KB. */
  readonly batchParts?: number;
  /**
   * The most parts a run's stream holds (default 100,000). The part that
   * would pass it is replaced by one `{ type: "stream-full" }`, and the
   * drive writes no more: the run goes on, and a follower that reaches
   * that part gets `StreamTooLong`.
   */
  readonly maxParts?: number;
}

const STREAM_OPTIONS: OptionTable<StreamOptions> = { flushMs: true, batchParts: true, maxParts: true };

/** The stream options as a writer uses them, every one set. */
export type StreamTerms = Required<StreamOptions>;

/** A batch is appended once its parts' JSON passes this many bytes. */
const BATCH_BYTES = 64 * 1024;

/** Checks `stream` options (`true`, `false`, undefined, or `StreamOptions`) for `where`: the terms, or undefined when off. */
export function streamTerms(where: string, stream: boolean | StreamOptions | undefined): StreamTerms | undefined {
  if (stream === undefined || stream === false) return undefined;
  const options = stream === true ? {} : stream;
  checkOptions(`${where}: stream`, options, STREAM_OPTIONS);
  const terms = { flushMs: 50, batchParts: 200, maxParts: 100_000, ...options };
  const whole = (key: keyof StreamTerms, min: number, max: number) => {
    const value = terms[key];
    if (!Number.isSafeInteger(value) || value < min || value > max)
      throw new InvalidInput(
        `${where}: stream.${key} must be a whole number from ${min} to ${max}, not ${String(value)}.`,
      );
  };
  whole("flushMs", 0, 60_000);
  whole("batchParts", 1, MAX_STREAM_BATCH);
  whole("maxParts", 1, 100_000_000);
  return terms;
}

/** Parts a run's stream has that a follower in this process may read now: woken at once instead of at its next poll. */
const news = new WeakMap<CheckpointStore, Map<string, Set<() => void>>>();

/** Calls `listener` each time a batch of `runId`'s stream lands through `store` in this process; gives the unsubscribe. */
export function onStreamNews(store: CheckpointStore, runId: string, listener: () => void): () => void {
  const byRun = news.get(store) ?? new Map<string, Set<() => void>>();
  news.set(store, byRun);
  const listeners = byRun.get(runId) ?? new Set();
  byRun.set(runId, listeners);
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) byRun.delete(runId);
  };
}

/** Wakes the followers of `runId` in this process: a batch of its stream landed, or a checkpoint that stops its drive did. */
export function tellNews(store: CheckpointStore, runId: string): void {
  for (const listener of news.get(store)?.get(runId) ?? []) listener();
}

/**
 * One drive's writer of its run's stream: parts wait in memory and are
 * sealed into a batch (purpose `stream`) every `flushMs`, at `batchParts`,
 * or when a checkpoint is sealed (`settle`), then go through the run's
 * writer in order with its records and checkpoints. So the checkpoint
 * counts every part before it, and what streams never waits on the store.
 */
export class StreamWriter {
  readonly #store: CheckpointStore;
  readonly #sealer: Sealer;
  readonly #runId: string;
  readonly #writer: RunWriter;
  readonly #terms: StreamTerms;
  readonly #segment: () => number;
  #parts: JsonObject[] = [];
  #bytes = 0;
  /** The offset of the first part waiting in memory: every part before it is queued or appended. */
  #offset: number;
  #timer: NodeJS.Timeout | undefined;
  #full = false;
  #closed = false;

  constructor(
    run: { readonly store: CheckpointStore; readonly sealer: Sealer; readonly runId: string },
    writer: RunWriter,
    terms: StreamTerms,
    segment: () => number,
    length: number,
  ) {
    this.#store = run.store;
    this.#sealer = run.sealer;
    this.#runId = run.runId;
    this.#writer = writer;
    this.#terms = terms;
    this.#segment = segment;
    this.#offset = length;
  }

  /** The offset the next part gets. */
  get length(): number {
    return this.#offset + this.#parts.length;
  }

  /**
   * Adds a part, to be appended with the next batch: a plain JSON object
   * with a `type` string, checked (and copied) now, since it is sealed later,
   * in a timer where nothing could catch the error; anything else is
   * `InvalidInput`, thrown to the writer. A model's delta that follows one of
   * its kind in the batch is joined to it: the stream keeps text, not a part
   * per token.
   */
  write(part: JsonObject): void {
    part = isDelta(part) ? { type: part["type"] as string, text: part["text"] as string } : checkedPart(part);
    if (this.#closed || this.#full) return;
    const last = this.#parts.at(-1);
    if (last !== undefined && isDelta(part) && isDelta(last) && last["type"] === part["type"]) {
      this.#parts[this.#parts.length - 1] = { type: part["type"] as string, text: `${last["text"]}${part["text"]}` };
      this.#bytes += (part["text"] as string).length;
    } else {
      if (this.length + 1 >= this.#terms.maxParts) {
        this.#full = true;
        part = { type: "stream-full", limit: this.#terms.maxParts };
      }
      this.#parts.push(part);
      this.#bytes += estimateBytes(part);
    }
    if (this.#parts.length >= this.#terms.batchParts || this.#bytes >= BATCH_BYTES || this.#full) this.#queue();
    else this.#timer ??= setTimeout(() => this.#queue(), this.#terms.flushMs);
  }

  /** Queues what waits in memory, ahead of a checkpoint: the offset the checkpoint records (`streamed`). */
  settle(): number {
    this.#queue();
    return this.#offset;
  }

  /** Writes nothing more (the drive ended or gave the run up); what waits is queued first. */
  close(): void {
    this.#queue();
    this.#closed = true;
  }

  #queue(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#parts.length === 0 || this.#closed) return;
    const parts = this.#parts;
    const offset = this.#offset;
    const segment = this.#segment();
    this.#parts = [];
    this.#bytes = 0;
    this.#offset += parts.length;
    const count = parts.length;
    const sealed = this.#sealer.seal("stream", { runId: this.#runId, segment, offset, count, parts }, "a stream part");
    // Its failure reaches the run's next write, as a record's does: the run cannot go on then.
    void this.#writer
      .write({ kind: "stream", segment, offset, count, sealed }, false, () => tellNews(this.#store, this.#runId))
      .catch(() => undefined);
  }
}

/**
 * A copy of a part as it is sealed (as deep in its batch's body), or
 * `InvalidInput`: a plain JSON object with a `type` string, which every
 * reader of the stream requires.
 */
function checkedPart(part: unknown): JsonObject {
  const copy = canonicalCopy(part, "a stream part");
  if (!isJsonObject(copy) || typeof copy["type"] !== "string" || copy["type"] === "")
    throw new InvalidInput("a stream part must be a plain JSON object with a `type` string.");
  // Nested as its batch's body holds it: a part deep enough to pass alone may not pass there.
  canonicalCopy({ parts: [copy] }, "a stream part in its batch");
  return copy;
}

/** A text or reasoning delta and nothing else: consecutive ones of a batch are joined. */
function isDelta(part: JsonObject): boolean {
  const type = part["type"];
  return (
    (type === "text-delta" || type === "reasoning-delta") &&
    typeof part["text"] === "string" &&
    Object.keys(part).length === 2
  );
}

/** About how many bytes a part's JSON takes: a token's text is measured without writing the part out. */
function estimateBytes(part: JsonObject): number {
  let bytes = 16;
  for (const value of Object.values(part))
    bytes += typeof value === "string" ? value.length : typeof value === "object" ? JSON.stringify(value).length : 16;
  return bytes;
}
