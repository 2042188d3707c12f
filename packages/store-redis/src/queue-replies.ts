import { CheckpointStoreCorrupt, checkQueuePlace, type QueuePlace, queuePlaceJson } from "@durable/core/store";

/*
 * What the run's scripts are told of its queue and what they answer about
 * it (see queues.ts): the place as a run's meta keeps it, the scripts'
 * demands ({"queue", …}) and what an accepted write used.
 */

/** What a write's run script did with what it was brought (undefined: refused, it used nothing). */
export interface QueueOutcome {
  readonly place: QueuePlace;
  readonly slot: boolean;
  readonly start: boolean;
  readonly add: boolean;
  /** The drive whose reservation the write made needless. */
  readonly drop: string;
  /** Its entry in the ready index to drop: "all", or the write's step (unless it was added for a later one); '' none. */
  readonly unindex: string;
}

/** What a write lacks of its queue: a reservation, a start, an entry in the ready index. */
export interface Needs {
  readonly slot: boolean;
  readonly start: boolean;
  readonly add: boolean;
}

/** What the write script did for a queued run: {"ok", slot, start, add, drop, unindex, place}; undefined for any other reply. */
export function writeOutcome(reply: unknown): QueueOutcome | undefined {
  if (!Array.isArray(reply) || reply[0] !== "ok" || reply.length !== 7) return undefined;
  const [, slot, start, add, drop, unindex, text] = reply as string[];
  const place = placeOr(text ?? "");
  if (place === undefined) return undefined;
  return {
    place,
    slot: slot === "1",
    start: start === "1",
    add: add === "1",
    drop: drop ?? "",
    unindex: unindex ?? "",
  };
}

/** What the renew script did for a queued run: {"ok", expiresAt, slot, place}; undefined for any other reply. */
export function renewOutcome(reply: unknown): QueueOutcome | undefined {
  if (!Array.isArray(reply) || reply[0] !== "ok" || typeof reply[3] !== "string" || reply[3] === "") return undefined;
  const place = placeOr(reply[3]);
  return place && { place, slot: reply[2] === "1", start: false, add: false, drop: "", unindex: "" };
}

/** Whether a queue limits how many of its runs hold a slot: then a drive's lease needs a reservation. */
export function slotted(place: QueuePlace): boolean {
  return place.concurrency !== undefined || place.perKey !== undefined;
}

/** A limit as an ARGV: its digits, or '' for none. */
export function numberText(value: number | undefined): string {
  return value === undefined ? "" : String(value);
}

/** A run script's {"queue", place, member, slot, start, index}: what the write lacks; undefined for any other reply. */
export function demandOf(
  runId: string,
  reply: unknown,
): { place: QueuePlace; member: string; needs: Needs } | undefined {
  if (!Array.isArray(reply) || reply[0] !== "queue") return undefined;
  const [, place, member, slot, start, add] = reply as string[];
  return {
    place: placeOf(runId, place ?? ""),
    member: member ?? "",
    needs: { slot: slot === "1", start: start === "1", add: add === "1" },
  };
}

/** A place as its run's meta keeps it: JSON of its fields only (undefined ones left out). */
export function placeJson(place: QueuePlace): string {
  return JSON.stringify(queuePlaceJson(place));
}

/** The place a run's meta keeps (JSON, as its step 0 gave it); another shape is corrupt. */
function placeOf(runId: string, text: string): QueuePlace {
  const place = placeOr(text);
  if (place === undefined)
    throw new CheckpointStoreCorrupt(runId, "its stored queue place is not one a save writes (JSON of a QueuePlace).");
  return place;
}

export function placeOr(text: string): QueuePlace | undefined {
  try {
    const place = JSON.parse(text) as QueuePlace;
    checkQueuePlace(place);
    return place;
  } catch {
    return undefined;
  }
}
