import { createHash } from "node:crypto";
import { SAVE_RENEWS_AFTER, UNFINISHED } from "@durable/core/store";
import { EXPIRY_DIGITS, INDEX_VERSION } from "./keys.js";

/**
 * The server-side scripts: each operation is one script, one round trip,
 * atomic. A script touches only the keys it is given (declared in KEYS), and
 * they all share one hash tag, so every script runs on one Redis Cluster
 * slot. The keys (see keys.ts): meta, cps, calls of a run; unfinished,
 * expiring, claimable, claimable-of and schema of its bucket. A refusal
 * returns {"conflict", reason}, {"notfound"} or {"leaseheld", ...}; success
 * returns {"ok"}. Times are ms since the epoch by the server's TIME, never
 * the client's clock.
 */

/** The server's clock, in ms since the epoch: the only clock of leases and expiry. */
const NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms_text(ms) return string.format('%.0f', ms) end`;

/** Hex-encodes a string, as the client does for flows and run ids. */
const HEX = `
local function hex(text)
  return (string.gsub(text, '.', function(c) return string.format('%02x', string.byte(c)) end))
end`;

/**
 * The run's keys (KEYS 1-3) expire ttl seconds from now (never while paused,
 * or with ttl 0); a running run's entry in expiring (KEYS[e]) says when, so
 * reads can skip it once the run is gone. A run that is not to expire and
 * whose keys never did (they are set together) is left as it is: one command,
 * not four that change nothing.
 */
const EXPIRY = `${NOW}
local function expiry(status, ttl, member, e, now)
  local lasts = status ~= 'paused' and ttl > 0
  if not lasts and redis.call('PTTL', KEYS[1]) == -1 then return end
  for i = 1, 3 do
    if lasts then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
  if lasts and status == 'running' then
    redis.call('ZADD', KEYS[e], ms_text(now + ttl * 1000), member)
  else
    redis.call('ZREM', KEYS[e], member)
  end
end`;

/**
 * A run's place in its bucket's claimable index (KEYS[c]), found through
 * claimable-of (KEYS[o]): at its lease's expiry (0 when released) while it
 * runs, nowhere (expires false) otherwise. The member is the index member
 * with the expiry, zero-padded, between flow and run, so one flow's runs
 * that are claimable at a time are one lexicographic range.
 */
const PLACE = `
local function claimable_member(member, expires)
  local flow, run = string.match(member, '^(%x*):(%x*)$')
  return flow .. ':' .. string.format('%0${EXPIRY_DIGITS}.0f', expires) .. ':' .. run
end
local function place(member, expires, c, o)
  local old = redis.call('HGET', KEYS[o], member)
  if old then redis.call('ZREM', KEYS[c], old) end
  if expires then
    local entry = claimable_member(member, expires)
    redis.call('ZADD', KEYS[c], 0, entry)
    redis.call('HSET', KEYS[o], member, entry)
  elseif old then
    redis.call('HDEL', KEYS[o], member)
  end
end`;

/**
 * KEYS meta cps calls unfinished expiring claimable claimable-of;
 * ARGV member step status segment flow kind sealed ttl owner ms takeover.
 * After the compare-and-set, a claim of a run whose live lease another owner
 * holds is {"leaseheld", owner, expiresAt, now}, unless takeover is "1". An
 * accepted running save with ms > 0 sets the lease; any other releases it.
 * Also drops up to 100 index entries of the bucket whose runs expired: the
 * only place stale entries are cleaned up (reads skip them).
 */
const SAVE = `${EXPIRY}${PLACE}
local step, segment, ttl, ms = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[8]), tonumber(ARGV[10])
local now = now_ms()
local m = redis.call('HMGET', KEYS[1], 'flow', 'kind', 'step', 'status', 'segment', 'segcalls', 'owner', 'expires')
local segcalls = 0
if not m[3] then
  if step ~= 0 then return {'conflict', 'nothing is stored, so the first step must be 0, not ' .. step .. '.'} end
else
  -- A failed run may be claimed again (a raised segment): that is a retry (saveRefusal).
  if m[4] == 'done' or (m[4] == 'failed' and segment <= tonumber(m[5])) then
    return {'conflict', 'the run ended (' .. m[4] .. ').'}
  end
  if m[1] ~= ARGV[5] or m[2] ~= ARGV[6] then return {'conflict', 'the run belongs to ' .. m[2] .. ' "' .. m[1] .. '".'} end
  if step ~= tonumber(m[3]) + 1 then
    return {'conflict', 'step ' .. step .. ' is not the next one (' .. (tonumber(m[3]) + 1) .. '): another worker holds the run.'}
  end
  if segment < tonumber(m[5]) then
    return {'conflict', 'segment ' .. segment .. ' is older than the run\\'s (' .. m[5] .. '): this worker was cut off.'}
  end
  if segment == tonumber(m[5]) then segcalls = tonumber(m[6]) end
  local held = m[7] and m[7] ~= '' and tonumber(m[8]) > now
  if segment > tonumber(m[5]) and held and m[7] ~= ARGV[9] and ARGV[11] ~= '1' then
    return {'leaseheld', m[7], m[8], ms_text(now)}
  end
end
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode({ARGV[3], segment, ARGV[5], ARGV[6], ARGV[7]}))
redis.call('HSET', KEYS[1], 'flow', ARGV[5], 'kind', ARGV[6], 'step', step, 'status', ARGV[3], 'segment', segment, 'segcalls', segcalls)
if ${UNFINISHED.map((status) => `ARGV[3] == '${status}'`).join(" or ")} then redis.call('ZADD', KEYS[4], 0, ARGV[1]) else redis.call('ZREM', KEYS[4], ARGV[1]) end
if ARGV[3] == 'running' and ms > 0 then
  -- The owner's lease stays as it is while less than a third of it passed (leaseAfterSave).
  local held = m[7] == ARGV[9] and tonumber(m[8])
  if not (held and held <= now + ms and held - now >= ms * ${1 - SAVE_RENEWS_AFTER}) then
    redis.call('HSET', KEYS[1], 'owner', ARGV[9], 'expires', ms_text(now + ms))
    place(ARGV[1], now + ms, 6, 7)
  end
else
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  place(ARGV[1], ARGV[3] == 'running' and 0, 6, 7)
end
expiry(ARGV[3], ttl, ARGV[1], 5, now)
local stale = redis.call('ZRANGE', KEYS[5], '-inf', '(' .. ms_text(now), 'BYSCORE', 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', KEYS[4], unpack(stale))
  redis.call('ZREM', KEYS[5], unpack(stale))
  for _, entry in ipairs(redis.call('HMGET', KEYS[7], unpack(stale))) do
    if entry then redis.call('ZREM', KEYS[6], entry) end
  end
  redis.call('HDEL', KEYS[7], unpack(stale))
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
expiry(m[1], ttl, hex(m[4]) .. ':' .. ARGV[5], 4, now_ms())
return {'ok'}`;

/** KEYS meta cps: the row of the latest step, or nil. Reads only. */
const LATEST = `
local step = redis.call('HGET', KEYS[1], 'step')
if not step then return false end
local row = redis.call('HGET', KEYS[2], step)
if not row then return false end
return {step, row}`;

/** KEYS meta cps calls unfinished expiring claimable claimable-of; ARGV hex run id: removes every key of the run and its index entries. */
const DELETE = `${HEX}${PLACE}
local flow = redis.call('HGET', KEYS[1], 'flow')
if flow then
  local member = hex(flow) .. ':' .. ARGV[1]
  redis.call('ZREM', KEYS[4], member)
  redis.call('ZREM', KEYS[5], member)
  place(member, false, 6, 7)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {'ok'}`;

/**
 * KEYS unfinished expiring of a bucket; ARGV hex flow ('' for every flow),
 * the last member returned (or ''), limit. Returns {last member read, the
 * members whose runs have not expired, how many were read}. Reads only: an
 * entry whose run expired is skipped, and left for a save to drop.
 */
const PAGE = `${NOW}
local from, to = '-', '+'
if ARGV[1] ~= '' then from, to = '[' .. ARGV[1] .. ':', '(' .. ARGV[1] .. ';' end
if ARGV[2] ~= '' then from = '(' .. ARGV[2] end
local members = redis.call('ZRANGE', KEYS[1], from, to, 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local now = now_ms()
local out = {}
for _, member in ipairs(members) do
  local expires = redis.call('ZSCORE', KEYS[2], member)
  if not expires or tonumber(expires) >= now then table.insert(out, member) end
end
return {members[#members] or '', out, #members}`;

/**
 * KEYS claimable expiring schema of a bucket; ARGV hex flow, the last entry
 * returned (or ''), limit, the listing's now (or '' to read the clock). The
 * flow's running runs whose lease expired by now (0: released) are one range.
 * Returns {"page", last entry read, the index members of runs that have not
 * expired, how many were read, now}; {"migrate"} while the bucket's indexes
 * are older than leases. Reads only.
 */
const CLAIMABLE_PAGE = `${NOW}
if redis.call('GET', KEYS[3]) ~= '${INDEX_VERSION}' then return {'migrate'} end
local now = ARGV[4] == '' and now_ms() or tonumber(ARGV[4])
local from = ARGV[2] == '' and ('[' .. ARGV[1] .. ':') or ('(' .. ARGV[2])
local to = '(' .. ARGV[1] .. ':' .. string.format('%0${EXPIRY_DIGITS}.0f', now + 1)
local entries = redis.call('ZRANGE', KEYS[1], from, to, 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, entry in ipairs(entries) do
  local flow, run = string.match(entry, '^(%x*):%d*:(%x*)$')
  local member = flow .. ':' .. run
  local expires = redis.call('ZSCORE', KEYS[2], member)
  if not expires or tonumber(expires) >= now then table.insert(out, member) end
end
return {'page', entries[#entries] or '', out, #entries, ms_text(now)}`;

/**
 * KEYS meta cps calls unfinished expiring claimable claimable-of; ARGV segment
 * owner ms ttl hex-run-id. Extends the owner's lease (live or run out, not
 * released) of the running run's current segment to now + ms: {"ok", expiresAt}.
 * Otherwise {"notfound"}, or {"refused", step, status, flow, kind, segment,
 * owner, expiresAt} for the client to name the reason.
 */
const RENEW = `${EXPIRY}${PLACE}${HEX}
local segment, ms, ttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local m = redis.call('HMGET', KEYS[1], 'step', 'status', 'flow', 'kind', 'segment', 'owner', 'expires')
if not m[1] then return {'notfound'} end
if m[2] ~= 'running' or tonumber(m[5]) ~= segment or m[6] ~= ARGV[2] then
  return {'refused', m[1], m[2], m[3], m[4], m[5], m[6] or '', m[7] or '0'}
end
local now = now_ms()
local member = hex(m[3]) .. ':' .. ARGV[5]
redis.call('HSET', KEYS[1], 'expires', ms_text(now + ms))
place(member, now + ms, 6, 7)
expiry('running', ttl, member, 5, now)
return {'ok', ms_text(now + ms)}`;

/** KEYS meta claimable claimable-of; ARGV segment owner hex-run-id: releases the lease if the owner holds it in that segment. */
const RELEASE = `${HEX}${PLACE}
local m = redis.call('HMGET', KEYS[1], 'segment', 'owner', 'flow')
if m[2] and m[2] == ARGV[2] and tonumber(m[1]) == tonumber(ARGV[1]) then
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  place(hex(m[3]) .. ':' .. ARGV[3], 0, 2, 3)
end
return {'ok'}`;

/** KEYS meta: {owner, expiresAt, now}, or nil when the run is unknown or holds no lease. Reads only. */
const LEASE = `${NOW}
local m = redis.call('HMGET', KEYS[1], 'owner', 'expires')
if not m[1] then return false end
return {m[1], m[2], ms_text(now_ms())}`;

/**
 * KEYS meta claimable claimable-of; ARGV index member. Backfill of indexes
 * written before leases: a running run missing from claimable is added, with
 * no lease (none was ever taken).
 */
const ADOPT = `${HEX}${PLACE}
if redis.call('HGET', KEYS[3], ARGV[1]) then return {'ok'} end
local m = redis.call('HMGET', KEYS[1], 'status', 'flow')
if m[1] == 'running' and string.match(ARGV[1], '^(%x*):') == hex(m[2]) then place(ARGV[1], 0, 2, 3) end
return {'ok'}`;

/** KEYS schema; ARGV version: marks a bucket's indexes as backfilled. */
const MIGRATED = `
redis.call('SET', KEYS[1], ARGV[1])
return {'ok'}`;

/** A script with its SHA1, for EVALSHA. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") });

type ScriptName =
  | "save"
  | "record"
  | "latest"
  | "delete"
  | "page"
  | "claimablePage"
  | "renew"
  | "release"
  | "lease"
  | "adopt"
  | "migrated";

export const SCRIPTS: Readonly<Record<ScriptName, Script>> = {
  save: script(SAVE),
  record: script(RECORD),
  latest: script(LATEST),
  delete: script(DELETE),
  page: script(PAGE),
  claimablePage: script(CLAIMABLE_PAGE),
  renew: script(RENEW),
  release: script(RELEASE),
  lease: script(LEASE),
  adopt: script(ADOPT),
  migrated: script(MIGRATED),
};
