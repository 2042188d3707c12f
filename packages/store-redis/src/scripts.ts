import { createHash } from "node:crypto";

/**
 * The server-side scripts: each operation is one script, one round trip,
 * atomic. Every key a script touches shares the run's hash tag, so the scripts
 * are safe on Redis Cluster. Keys of one run (the `KEYS` given):
 *   meta   HASH  flow, kind, step, status, segment, segcalls (records in the current segment)
 *   cps    HASH  step -> JSON [status, segment, flow, kind, sealed]
 *   calls  HASH  "segment:seq" -> sealed
 *   index  ZSET  per hash tag: "<hex flow>:<hex run id>" for every unfinished run
 * A refusal returns {"conflict", reason} or {"notfound"}; success returns {"ok"}.
 */

/** Sets or lifts the run's expiry: none while paused, `ttl` seconds from this write otherwise (0 = never). */
const EXPIRY = `
local function expiry(status, ttl)
  for i = 1, 3 do
    if status == 'paused' or ttl == 0 then redis.call('PERSIST', KEYS[i]) else redis.call('EXPIRE', KEYS[i], ttl) end
  end
end`;

/** KEYS meta cps calls index; ARGV member step status segment flow kind sealed ttl */
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
if ARGV[3] == 'running' or ARGV[3] == 'paused' then redis.call('ZADD', KEYS[4], 0, ARGV[1]) else redis.call('ZREM', KEYS[4], ARGV[1]) end
expiry(ARGV[3], ttl)
return {'ok'}`;

/** KEYS meta cps calls; ARGV segment seq sealed ttl */
const RECORD = `${EXPIRY}
local segment, seq, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local m = redis.call('HMGET', KEYS[1], 'status', 'segment', 'segcalls')
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
expiry(m[1], ttl)
return {'ok'}`;

/** KEYS meta cps: the row of the latest step, or nil. */
const LATEST = `
local step = redis.call('HGET', KEYS[1], 'step')
if not step then return false end
local row = redis.call('HGET', KEYS[2], step)
if not row then return false end
return {step, row}`;

/** KEYS meta cps calls index; ARGV hex run id: removes every key of the run and its index entry. */
const DELETE = `
local flow = redis.call('HGET', KEYS[1], 'flow')
if flow then
  local hex = string.gsub(flow, '.', function(c) return string.format('%02x', string.byte(c)) end)
  redis.call('ZREM', KEYS[4], hex .. ':' .. ARGV[1])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {'ok'}`;

/**
 * KEYS index; ARGV hex flow, the last member returned (or ''), limit, key
 * prefix of the index's runs. Returns the next members of unfinished runs of
 * the flow, dropping entries whose run expired. The meta keys it reads share
 * the index's hash tag, so on a cluster they live on the index's node.
 */
const PAGE = `
local from = ARGV[2] == '' and ('[' .. ARGV[1] .. ':') or ('(' .. ARGV[2])
local members = redis.call('ZRANGE', KEYS[1], from, '(' .. ARGV[1] .. ';', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, member in ipairs(members) do
  local hex = string.sub(member, string.len(ARGV[1]) + 2)
  local status = redis.call('HGET', ARGV[4] .. hex .. ':meta', 'status')
  if status == 'running' or status == 'paused' then table.insert(out, member) else redis.call('ZREM', KEYS[1], member) end
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
