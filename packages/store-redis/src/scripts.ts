import { createHash } from "node:crypto";
import { EXPIRY_DIGITS, INDEX_VERSION } from "./keys.js";
import { EXPIRY, HEAD, HEX, NOW, PLACE } from "./lua.js";
import { SEND } from "./inbox.js";
import { APPEND, DROP, READ } from "./stream.js";
import { QUEUE_SOURCES, QUEUED } from "./queue-scripts.js";
import { WRITE } from "./write-script.js";

/**
 * The server-side scripts: each operation is one script, one round trip,
 * atomic; every write (save, recordCall, commit) is the write script,
 * `sendEvent` the send script (inbox.ts), and `appendStream` the append
 * script (stream.ts). A script touches only the keys it is given (declared
 * in KEYS), and they all share one hash tag, so every script runs on one
 * Redis Cluster slot. The keys (see keys.ts): meta, cps, calls, inbox,
 * inbox-by-key and stream of a run; unfinished, expiring, claimable, claimable-of, recent and schema of its bucket. A refusal
 * returns {"conflict", reason}, {"notfound"} or {"leaseheld", ...}; success
 * returns {"ok"}. Times are ms since the epoch by the server's TIME, never
 * the client's clock.
 */

/**
 * KEYS meta cps: {step, row} of the latest step, or nil for an unknown run;
 * {"corrupt", reason} when the head is malformed or names a step that is not
 * stored. Reads only.
 */
const LATEST = `${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return false end
local row = redis.call('HGET', KEYS[2], m[3])
if not row then return {'corrupt', 'names step ' .. m[3] .. ' as its latest, which is not stored'} end
return {m[3], row}`;

/**
 * KEYS meta cps; ARGV from: {step, row, step, row, …} of every stored step
 * from \`from\` to the latest, in order (a step not stored is left out, for
 * the reader to find the gap); {"corrupt", reason} when the head is malformed.
 * Reads only: HMGET of the range, in slices that stay under Lua's stack limit.
 */
const HISTORY = `${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return {} end
local out = {}
local last = tonumber(m[3])
local from = tonumber(ARGV[1])
while from <= last do
  local upto = math.min(last, from + 999)
  local fields = {}
  for s = from, upto do fields[#fields + 1] = tostring(s) end
  local rows = redis.call('HMGET', KEYS[2], unpack(fields))
  for i, row in ipairs(rows) do
    if row then
      out[#out + 1] = fields[i]
      out[#out + 1] = row
    end
  end
  from = upto + 1
end
return out`;

/**
 * KEYS meta calls; ARGV segment seq: {field, sealed, …} of every record at or
 * after (segment, seq), in order; {"corrupt", reason} for a malformed head.
 * Reads only: HMGET of each segment's fields in slices, up to its first
 * missing record (a segment's records have no gap, so what follows one is a
 * gap's other side, which the reader's counts judge); no stored count bounds
 * the loop, so a changed count cannot keep the server busy.
 */
const CALLS_FROM = `${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return {} end
local out = {}
local first, last = tonumber(ARGV[1]), tonumber(m[5])
for segment = first, last do
  local seq = segment == first and tonumber(ARGV[2]) or 0
  local more = true
  while more do
    local fields = {}
    for n = seq, seq + 255 do fields[#fields + 1] = segment .. ':' .. n end
    for i, row in ipairs(redis.call('HMGET', KEYS[2], unpack(fields))) do
      if not row then
        more = false
        break
      end
      out[#out + 1] = fields[i]
      out[#out + 1] = row
    end
    seq = seq + 256
  end
end
return out`;

/**
 * KEYS as `scriptKeys` gives them; ARGV hex run id: removes every key of the
 * run (its inbox and stream too) and its index entries. {"ok", place, owner, "all"} for
 * a run of a queue, for the client to drop its entry in the ready index and
 * the reservation of the drive that held it (owner '' when none did, or the
 * queue limits no slots).
 */
const DELETE = `${HEX}${PLACE}${QUEUED}
local flow = redis.call('HGET', KEYS[1], 'flow')
local q, owner = queue_of(), redis.call('HGET', KEYS[1], 'owner')
if flow then
  local member = hex(flow) .. ':' .. ARGV[1]
  redis.call('ZREM', KEYS[4], member)
  redis.call('ZREM', KEYS[5], member)
  place(member, false, 6, 7)
end
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[9], KEYS[10], KEYS[11])
if q then return {'ok', q.place, has(q.flags, 's') and drive(owner) and owner or '', 'all'} end
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
 * KEYS as `scriptKeys` gives them (meta cps calls unfinished expiring claimable claimable-of …); ARGV segment
 * owner ms ttl hex-run-id, and the queue terms of a renewal (hex queue,
 * reserved until, skew). Extends the owner's lease (live or run out, not
 * released) of the running run's current segment to now + ms: {"ok",
 * expiresAt, "1" when it used the terms' reservation, the run's queue place
 * or ''}. The lease of a drive
 * of a queue that limits slots needs one (`QueueTerms`), and is cut to its
 * end less the skew; lacking it, {"queue", place, member, "1", "", ""} and
 * nothing is written. Otherwise {"notfound"}, {"corrupt", reason}, or
 * {"refused", step, status, flow, kind, segment, owner, expiresAt} for the
 * client to name the reason.
 */
const RENEW = `${EXPIRY}${PLACE}${HEX}${HEAD}${QUEUED}
local segment, ms, ttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[3] then return {'notfound'} end
if m[4] ~= 'running' or tonumber(m[5]) ~= segment or m[7] ~= ARGV[2] then
  return {'refused', m[3], m[4], m[1], m[2], m[5], m[7] or '', m[8] or '0'}
end
local now = now_ms()
local expires, slot = now + ms, ''
local q = queue_of()
if q and has(q.flags, 's') and drive(ARGV[2]) then
  local cap = ARGV[6] == q.name and ARGV[7] ~= '' and tonumber(ARGV[7]) - tonumber(ARGV[8])
  if not (cap and cap > now) then return {'queue', q.place, q.member, '1', '', ''} end
  expires, slot = math.min(expires, cap), '1'
end
local member = hex(m[1]) .. ':' .. ARGV[5]
redis.call('HSET', KEYS[1], 'expires', ms_text(expires))
place(member, expires, 6, 7)
expiry('running', ttl, member, 5)
return {'ok', ms_text(expires), slot, q and q.place or ''}`;

/**
 * KEYS meta claimable claimable-of; ARGV segment owner hex-run-id: releases
 * the lease if the owner holds it in that segment; {"corrupt", reason} for a
 * malformed head. {"ok", place, owner} when the owner was a drive of a queue
 * that limits slots, whose reservation the client then drops.
 */
const RELEASE = `${HEX}${PLACE}${HEAD}${QUEUED}
local m, bad = head()
if bad then return {'corrupt', bad} end
if m[7] and m[7] == ARGV[2] and tonumber(m[5]) == tonumber(ARGV[1]) then
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  -- Released: claimable at once, unless its latest save waits for a decision (the memory store's rule too).
  place(hex(m[1]) .. ':' .. ARGV[3], m[4] == 'running' and not m[9] and 0, 2, 3)
  local q = queue_of()
  if q and has(q.flags, 's') and drive(m[7]) then return {'ok', q.place, m[7]} end
end
return {'ok'}`;

/** KEYS meta: {owner, expiresAt, now}, or nil when the run is unknown or holds no lease; {"corrupt", reason} for a malformed head. Reads only. */
const LEASE = `${NOW}${HEAD}
local m, bad = head()
if bad then return {'corrupt', bad} end
if not m[7] then return false end
return {m[7], m[8], ms_text(now_ms())}`;

/**
 * KEYS meta claimable claimable-of; ARGV index member. Backfill of indexes
 * written before leases: a running run missing from claimable is added, with
 * no lease (none was ever taken), unless it waits for a decision.
 */
const ADOPT = `${HEX}${PLACE}
if redis.call('HGET', KEYS[3], ARGV[1]) then return {'ok'} end
local m = redis.call('HMGET', KEYS[1], 'status', 'flow', 'decision')
if m[1] == 'running' and not m[3] and string.match(ARGV[1], '^(%x*):') == hex(m[2]) then place(ARGV[1], 0, 2, 3) end
return {'ok'}`;

/** KEYS schema; ARGV version: marks a bucket's indexes as backfilled. */
const MIGRATED = `
redis.call('SET', KEYS[1], ARGV[1])
return {'ok'}`;

/** A script with its SHA1, for EVALSHA, and whether it may write (then `replicas` waits after it). */
export interface Script {
  readonly source: string;
  readonly sha: string;
  readonly writes: boolean;
}

/** A script by its source; `writes`: it may write, so a store with `replicas` waits for them after it. */
export const script = (source: string, writes: boolean): Script => ({
  source,
  sha: createHash("sha1").update(source).digest("hex"),
  writes,
});

type ScriptName =
  | "write"
  | "send"
  | "append"
  | "stream"
  | "dropStream"
  | "latest"
  | "history"
  | "callsFrom"
  | "delete"
  | "page"
  | "claimablePage"
  | "renew"
  | "release"
  | "lease"
  | "adopt"
  | "migrated"
  | "queuePrep"
  | "queueDrop"
  | "queuePage"
  | "queueCheck";

export const SCRIPTS: Readonly<Record<ScriptName, Script>> = {
  write: script(WRITE, true),
  send: script(SEND, true),
  append: script(APPEND, true),
  stream: script(READ, false),
  dropStream: script(DROP, true),
  latest: script(LATEST, false),
  history: script(HISTORY, false),
  callsFrom: script(CALLS_FROM, false),
  delete: script(DELETE, true),
  page: script(PAGE, false),
  claimablePage: script(CLAIMABLE_PAGE, false),
  renew: script(RENEW, true),
  release: script(RELEASE, true),
  lease: script(LEASE, false),
  adopt: script(ADOPT, true),
  migrated: script(MIGRATED, true),
  queuePrep: script(QUEUE_SOURCES.prep, true),
  queueDrop: script(QUEUE_SOURCES.drop, true),
  queuePage: script(QUEUE_SOURCES.page, false),
  queueCheck: script(QUEUE_SOURCES.check, false),
};
