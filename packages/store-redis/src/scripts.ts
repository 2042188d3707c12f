import { createHash } from "node:crypto";
import { UNFINISHED } from "@durable/core/store";

/**
 * The server-side scripts: each operation is one script, one round trip,
 * atomic. A script touches only the keys it is given (declared in KEYS), and
 * they all share one hash tag, so every script runs on one Redis Cluster
 * slot. The keys (see keys.ts): meta, cps, calls of a run; unfinished and
 * expiring of its bucket. A refusal returns {"conflict", reason} or
 * {"notfound"}; success returns {"ok"}.
 */

/** The server's clock, in ms since the epoch. */
const NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`;

/** Hex-encodes a string, as the client does for flows and run ids. */
const HEX = `
local function hex(text)
  return (string.gsub(text, '.', function(c) return string.format('%02x', string.byte(c)) end))
end`;

/**
 * The run's keys (KEYS 1-3) expire ttl seconds from now (never while paused,
 * or with ttl 0); a running run's entry in expiring (KEYS[e]) says when, so
 * reads can skip it once the run is gone.
 */
const EXPIRY = `${NOW}
local function expiry(status, ttl, member, e)
  local lasts = status ~= 'paused' and ttl > 0
  for i = 1, 3 do
    if lasts then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
  if lasts and status == 'running' then
    redis.call('ZADD', KEYS[e], string.format('%.0f', now_ms() + ttl * 1000), member)
  else
    redis.call('ZREM', KEYS[e], member)
  end
end`;

/**
 * KEYS meta cps calls unfinished expiring; ARGV member step status segment flow kind sealed ttl.
 * Also drops up to 100 index entries of the bucket whose runs expired: the
 * only place stale entries are cleaned up (reads skip them).
 */
const SAVE = `${EXPIRY}
local step, segment, ttl = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[8])
local m = redis.call('HMGET', KEYS[1], 'flow', 'kind', 'step', 'status', 'segment', 'segcalls')
local segcalls = 0
if not m[3] then
  if step ~= 0 then return {'conflict', 'nothing is stored, so the first step must be 0, not ' .. step .. '.'} end
else
  if m[4] == 'done' or m[4] == 'failed' then return {'conflict', 'the run ended (' .. m[4] .. ').'} end
  if m[1] ~= ARGV[5] or m[2] ~= ARGV[6] then return {'conflict', 'the run belongs to ' .. m[2] .. ' "' .. m[1] .. '".'} end
  if step ~= tonumber(m[3]) + 1 then
    return {'conflict', 'step ' .. step .. ' is not the next one (' .. (tonumber(m[3]) + 1) .. '): another worker holds the run.'}
  end
  if segment < tonumber(m[5]) then
    return {'conflict', 'segment ' .. segment .. ' is older than the run\\'s (' .. m[5] .. '): this worker was cut off.'}
  end
  if segment == tonumber(m[5]) then segcalls = tonumber(m[6]) end
end
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode({ARGV[3], segment, ARGV[5], ARGV[6], ARGV[7]}))
redis.call('HSET', KEYS[1], 'flow', ARGV[5], 'kind', ARGV[6], 'step', step, 'status', ARGV[3], 'segment', segment, 'segcalls', segcalls)
if ${UNFINISHED.map((status) => `ARGV[3] == '${status}'`).join(" or ")} then redis.call('ZADD', KEYS[4], 0, ARGV[1]) else redis.call('ZREM', KEYS[4], ARGV[1]) end
expiry(ARGV[3], ttl, ARGV[1], 5)
local stale = redis.call('ZRANGE', KEYS[5], '-inf', '(' .. string.format('%.0f', now_ms()), 'BYSCORE', 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', KEYS[4], unpack(stale))
  redis.call('ZREM', KEYS[5], unpack(stale))
end
return {'ok'}`;

/** KEYS meta cps calls expiring; ARGV segment seq sealed ttl hex-run-id */
const RECORD = `${EXPIRY}${HEX}
local segment, seq, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local m = redis.call('HMGET', KEYS[1], 'status', 'segment', 'segcalls', 'flow')
if not m[1] then return {'notfound'} end
if m[1] == 'done' or m[1] == 'failed' then return {'conflict', 'the run ended (' .. m[1] .. '); it takes no more calls.'} end
if segment ~= tonumber(m[2]) then
  return {'conflict', 'call-log segment ' .. segment .. ' is not the run\\'s current one (' .. m[2] .. '): this worker was cut off.'}
end
local field = segment .. ':' .. seq
if seq < tonumber(m[3]) and redis.call('HGET', KEYS[3], field) == ARGV[3] then return {'ok'} end
if seq ~= tonumber(m[3]) then
  return {'conflict', 'call record ' .. seq .. ' of segment ' .. segment .. ' is not the next one (' .. m[3] .. ').'}
end
redis.call('HSET', KEYS[3], field, ARGV[3])
redis.call('HINCRBY', KEYS[1], 'segcalls', 1)
expiry(m[1], ttl, hex(m[4]) .. ':' .. ARGV[5], 4)
return {'ok'}`;

/** KEYS meta cps: the row of the latest step, or nil. Reads only. */
const LATEST = `
local step = redis.call('HGET', KEYS[1], 'step')
if not step then return false end
local row = redis.call('HGET', KEYS[2], step)
if not row then return false end
return {step, row}`;

/** KEYS meta cps calls unfinished expiring; ARGV hex run id: removes every key of the run and its index entries. */
const DELETE = `${HEX}
local flow = redis.call('HGET', KEYS[1], 'flow')
if flow then
  redis.call('ZREM', KEYS[4], hex(flow) .. ':' .. ARGV[1])
  redis.call('ZREM', KEYS[5], hex(flow) .. ':' .. ARGV[1])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {'ok'}`;

/**
 * KEYS unfinished expiring of a bucket; ARGV hex flow, the last member
 * returned (or ''), limit. Returns {last member read, the members whose runs
 * have not expired, how many were read}. Reads only: an entry whose run
 * expired is skipped, and left for a save to drop.
 */
const PAGE = `${NOW}
local from = ARGV[2] == '' and ('[' .. ARGV[1] .. ':') or ('(' .. ARGV[2])
local members = redis.call('ZRANGE', KEYS[1], from, '(' .. ARGV[1] .. ';', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local now = now_ms()
local out = {}
for _, member in ipairs(members) do
  local expires = redis.call('ZSCORE', KEYS[2], member)
  if not expires or tonumber(expires) >= now then table.insert(out, member) end
end
return {members[#members] or '', out, #members}`;

/** A script with its SHA1, for EVALSHA. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") });

export const SCRIPTS: Readonly<Record<"save" | "record" | "latest" | "delete" | "page", Script>> = {
  save: script(SAVE),
  record: script(RECORD),
  latest: script(LATEST),
  delete: script(DELETE),
  page: script(PAGE),
};
