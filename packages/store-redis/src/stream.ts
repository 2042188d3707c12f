import {
  CheckpointConflict,
  CheckpointStoreCorrupt,
  checkedStreamBatch,
  MAX_STREAM_PAGE,
  type StoredStreamBatch,
  type StreamBatch,
  streamPage,
  streamRefusal,
} from "@durable/core/store";
import { corruptOr } from "./errors.js";
import { EXPIRY, HEAD, HEX, refusedHead } from "./lua.js";

/**
 * The streams capability (`appendStream`, `stream`, `dropStream`): each
 * run's stream is a sorted set (keys.ts: `stream`) of JSON [segment, offset,
 * count, sealed] of each batch, scored by its offset, so the batch that holds
 * a part is the last one scored at or below it: one reverse range read, and
 * the page from it one more, whatever the stream's length. How many parts it
 * holds, the next offset, is the meta hash's `parts` (absent: none), one
 * O(1) read inside the append. The stream is the run's key, under its hash
 * tag: it expires with the run's other keys and `delete` removes it.
 */

/**
 * The append of `appendStream`. KEYS as the write script's (`scriptKeys`);
 * ARGV ttl hex-run-id segment offset count sealed (checked by the client:
 * whole numbers, 1 to 1,000 parts). By the rules of `streamRefusal`: an
 * unknown run {"notfound"}; an ended run, a segment other than the latest
 * checkpoint's or an offset other than the stream's length {"refused", step,
 * status, flow, kind, segment, length} for the client to name which;
 * {"corrupt", reason} for a malformed head or length. Otherwise adds the
 * batch and moves the length past it: {"ok"}. A running run an earlier
 * version gave an expiry loses it, as at every write. The numbers go into
 * the batch's JSON as the client sent them (text): cjson would round a
 * number past 14 digits.
 */
export const APPEND: string = `${EXPIRY}${HEX}${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return {'notfound'} end
local length = redis.call('HGET', KEYS[1], 'parts') or '0'
if not string.match(length, '^%d+$') then return {'corrupt', 'holds ' .. cjson.encode(length) .. ' as its stream length'} end
local segment, offset = tonumber(ARGV[3]), tonumber(ARGV[4])
if m[4] == 'done' or m[4] == 'failed' or segment ~= tonumber(m[5]) or offset ~= tonumber(length) then
  return {'refused', m[3], m[4], m[1], m[2], m[5], length}
end
redis.call('ZADD', KEYS[11], ARGV[4], cjson.encode({ARGV[3], ARGV[4], ARGV[5], ARGV[6]}))
redis.call('HSET', KEYS[1], 'parts', ms_text(offset + tonumber(ARGV[5])))
expiry(m[4], tonumber(ARGV[1]), hex(m[1]) .. ':' .. ARGV[2], 5)
return {'ok'}`;

/**
 * KEYS stream; ARGV from: the batches from the last one scored at or below
 * `from` (the one that holds it, or the last batch when `from` is past the
 * end) on, by offset, at most a page. Reads only: two range reads of the
 * sorted set, O(log n) each plus the page.
 */
export const READ: string = `
local first = redis.call('ZRANGE', KEYS[1], ARGV[1], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
return redis.call('ZRANGE', KEYS[1], first[2] or '-inf', '+inf', 'BYSCORE', 'LIMIT', 0, ${MAX_STREAM_PAGE})`;

/** KEYS meta stream: removes the run's stream and its length, and nothing else. {"ok"}. */
export const DROP: string = `
redis.call('HDEL', KEYS[1], 'parts')
redis.call('DEL', KEYS[2])
return {'ok'}`;

/** The ARGV of the append script. */
export function appendArgs(ttlSeconds: number, hexRunId: string, batch: StreamBatch): string[] {
  const { segment, offset, count, sealed } = batch;
  return [String(ttlSeconds), hexRunId, String(segment), String(offset), String(count), sealed];
}

/** What the append script's reply means: nothing when it appended, or the refusal `streamRefusal` names, thrown. */
export function appendedOrRefused(runId: string, batch: StreamBatch, reply: unknown): void {
  const [verdict, ...fields] = corruptOr(runId, reply) as unknown[];
  if (verdict === "ok") return;
  const head = verdict === "notfound" ? undefined : refusedHead(fields);
  throw (
    streamRefusal(runId, head, Number(fields[5] ?? 0), batch) ??
    new CheckpointConflict(runId, "the stream batch was not appended.")
  );
}

/**
 * The batches of the read script's reply that hold part `from` or a later
 * one (`streamPage`), each checked (`checkedStreamBatch`): a member that is
 * not JSON [segment, offset, count, sealed] of those shapes is corrupt.
 */
export function batchesOf(runId: string, from: number, reply: unknown): StoredStreamBatch[] {
  if (!Array.isArray(reply)) throw new CheckpointStoreCorrupt(runId, "its stream read gave no list of batches.");
  const batches = reply.map((text: unknown) => {
    let row: unknown;
    try {
      row = JSON.parse(String(text));
    } catch (cause) {
      throw new CheckpointStoreCorrupt(runId, "a stored stream batch is not JSON.", { cause });
    }
    if (!Array.isArray(row) || row.length !== 4)
      throw new CheckpointStoreCorrupt(runId, "a stored stream batch is not [segment, offset, count, sealed].");
    const [segment, offset, count, sealed] = row as unknown[];
    return checkedStreamBatch(runId, { segment, offset, count, sealed });
  });
  return streamPage(batches, from);
}
