import {
  CheckpointConflict,
  CheckpointStoreCorrupt,
  checkedEvent,
  eventRefusal,
  type StoredEvent,
  WAITING,
} from "@durable/core/store";
import { corruptOr } from "./errors.js";
import { EXPIRY, HEAD, HEX, PLACE, refusedHead } from "./lua.js";

/**
 * The events capability (`sendEvent`, `inbox`): each run's inbox is a list
 * (keys.ts: `inbox`), JSON [key, sealed] of each event at the index that is
 * its seq, so its length, the next seq, is one O(1) read inside any script;
 * beside it a hash of the idempotency keys it holds (`inbox-by-key`: key →
 * seq), so a resend is found in O(1) too. Both are the run's keys, under its
 * hash tag: they expire with it and `delete` removes them.
 */

/**
 * The append of `sendEvent`. KEYS as the write script's (`scriptKeys`); ARGV
 * ttl hex-run-id seq key sealed. By the rules of `eventRefusal`, in its
 * order: an unknown run {"notfound"}; a key the inbox holds (a resend, even
 * to an ended run), an ended run or a seq other than the inbox's length
 * {"refused", step, status, flow, kind, segment, length, "1" for a resend}
 * for the client to name which; {"corrupt", reason} for a malformed head.
 * Otherwise appends the event, and releases a lease held by WAITING as
 * `release` does (the run waiting for an event is claimable at once, unless
 * it waits for a decision): {"ok"}. A running run an earlier version gave an
 * expiry loses it, as at every write.
 */
export const SEND: string = `${EXPIRY}${PLACE}${HEX}${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return {'notfound'} end
local count = redis.call('LLEN', KEYS[9])
local resend = redis.call('HEXISTS', KEYS[10], ARGV[4]) == 1
if resend or m[4] == 'done' or m[4] == 'failed' or tonumber(ARGV[3]) ~= count then
  return {'refused', m[3], m[4], m[1], m[2], m[5], count, resend and '1' or ''}
end
redis.call('RPUSH', KEYS[9], cjson.encode({ARGV[4], ARGV[5]}))
redis.call('HSET', KEYS[10], ARGV[4], count)
local member = hex(m[1]) .. ':' .. ARGV[2]
if m[7] == '${WAITING}' then
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  place(member, m[4] == 'running' and not m[9] and 0, 6, 7)
end
expiry(m[4], tonumber(ARGV[1]), member, 5)
return {'ok'}`;

/** An event as `sendEvent` takes it. */
export interface EventToSend {
  readonly seq: number;
  readonly key: string;
  readonly sealed: string;
}

/** The ARGV of the send script. */
export function sendArgs(ttlSeconds: number, hexRunId: string, event: EventToSend): string[] {
  return [String(ttlSeconds), hexRunId, String(event.seq), event.key, event.sealed];
}

/** What the send script's reply means: true (appended), false (a resend), or the refusal `eventRefusal` names, thrown. */
export function sentOrRefused(runId: string, seq: number, reply: unknown): boolean {
  const [verdict, ...fields] = corruptOr(runId, reply) as unknown[];
  if (verdict === "ok") return true;
  const head = verdict === "notfound" ? undefined : refusedHead(fields);
  const refused = eventRefusal(runId, seq, head, Number(fields[5] ?? 0), fields[6] === "1");
  if (refused === "duplicate") return false;
  throw refused ?? new CheckpointConflict(runId, "the event was not appended.");
}

/** The events of an inbox list read from index `from` on: JSON [key, sealed] each; another shape is corrupt. */
export function eventsOf(runId: string, from: number, entries: readonly string[]): StoredEvent[] {
  return entries.map((text, at) => {
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch (cause) {
      throw new CheckpointStoreCorrupt(runId, "a stored event is not JSON.", { cause });
    }
    if (!Array.isArray(row) || row.length !== 2)
      throw new CheckpointStoreCorrupt(runId, "a stored event is not [key, sealed].");
    const [key, sealed] = row as unknown[];
    return checkedEvent(runId, { seq: from + at, key, sealed });
  });
}
