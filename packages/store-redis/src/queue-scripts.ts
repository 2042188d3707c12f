import { ASLEEP, WAITING } from "@durable/core/store";
import { NOW } from "./lua.js";

/*
 * The queues capability in Lua (see queues.ts for the whole design). A
 * queue's state lives under its own hash tag (keys.ts, `queueKeys`), a run's
 * under its bucket's, and a script touches one slot: so the queue scripts
 * below and the run's own scripts (write, renew, release, delete) are
 * separate steps, ordered so that the queue's reservations always cover
 * every run of it that holds a slot, and its ready index every run of it
 * that may be claimable.
 */

/**
 * Run-side: what a run's meta hash (KEYS[1]) keeps of its queue, written by
 * its step 0: `qname` (the queue, hex), `qplace` (its place as JSON, for the
 * client), `qflags` (`s`: the queue limits slots, by concurrency or per key;
 * `r`: it has a rate), `qmember` (its member in the queue's ready index)
 * and `qout` ("1" while it need not be in that index: paused, ended,
 * waiting for a decision). queue_of() gives them, or nil for a run
 * started on no queue; drive() tells a drive's lease owner (a sleep's or a
 * wait's holds no slot).
 */
export const QUEUED: string = `
local function queue_of()
  local f = redis.call('HMGET', KEYS[1], 'qname', 'qplace', 'qmember', 'qout', 'qflags')
  if not f[1] then return nil end
  return {name = f[1], place = f[2] or '', member = f[3] or '', out = f[4] == '1', flags = f[5] or ''}
end
local function drive(owner)
  return type(owner) == 'string' and owner ~= '' and owner ~= '${ASLEEP}' and owner ~= '${WAITING}'
end
local function has(flags, flag) return string.find(flags, flag, 1, true) ~= nil end`;

/**
 * KEYS ready ready-of steps order slots starts key-slots (`queueScriptKeys`);
 * ARGV hex-run-id owner ms skew slot start concurrency per-key rate-limit
 * window index priority-key member keyed step. What a write of the run needs of
 * its queue before it is sent, all or nothing, by the queue's clock:
 * - slot ("1"): a reservation "<run>:<owner>" until now + ms + skew,
 *   refused while the queue's other runs with a live reservation number
 *   `concurrency`, or those of the run's key (keyed "1") `per-key`;
 * - start ("1"): a start recorded now, refused while the starts of the last
 *   `window` ms number `rate-limit` (older ones are dropped);
 * - index ("1"): the run in the ready index for its write at `step`, at
 *   `member` (its own, from its meta) or, with none, at the one it has there,
 *   or at a new one after every other of its priority (a start); `steps`
 *   keeps the highest step it was added for, so a drop sent by an earlier
 *   write (DROP) leaves it.
 * Returns {"full", held, held of the key, starts, earliest start, now} and
 * writes nothing but dropping what expired; or {"ok", reserved until,
 * "1" if the reservation is new, start id, member}, '' for what was not asked.
 */
const PREP = `${NOW}
local run, owner = ARGV[1], ARGV[2]
local ms, skew = tonumber(ARGV[3]), tonumber(ARGV[4])
local slot, start, index, keyed = ARGV[5] == '1', ARGV[6] == '1', ARGV[11] == '1', ARGV[14] == '1'
local concurrency, per_key, rate, window = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local now = now_ms()
-- Runs other than this one with a live reservation in the zset KEYS[k] (expired ones dropped first), up to limit.
local function others(k, limit)
  local seen, n, offset = {}, 0, 0
  while n < limit do
    local page = redis.call('ZRANGE', KEYS[k], '(' .. ms_text(now), '+inf', 'BYSCORE', 'LIMIT', offset, 256)
    for _, entry in ipairs(page) do
      local id = string.match(entry, '^(%x*):')
      if id ~= run and not seen[id] then
        seen[id] = true
        n = n + 1
      end
    end
    if #page < 256 then break end
    offset = offset + 256
  end
  return n
end
local held, of_key, started, earliest = 0, 0, 0, ''
if slot then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ms_text(now))
  if concurrency then held = others(5, concurrency) end
  if keyed then
    redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', ms_text(now))
    of_key = others(7, per_key)
  end
end
if start then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', ms_text(now - window))
  started = redis.call('ZCARD', KEYS[6])
  earliest = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')[2] or ''
end
if (concurrency and held >= concurrency) or (keyed and of_key >= per_key) or (start and started >= rate) then
  return {'full', held, of_key, started, earliest, ms_text(now)}
end
local reserved, fresh, start_id, member = '', '', '', ''
if slot then
  local entry = run .. ':' .. owner
  local upto = now + ms + skew
  local old = tonumber(redis.call('ZSCORE', KEYS[5], entry))
  if not old then fresh = '1' end
  if not old or old < upto then
    redis.call('ZADD', KEYS[5], ms_text(upto), entry)
    if keyed then redis.call('ZADD', KEYS[7], ms_text(upto), entry) end
  end
  reserved = ms_text(upto)
end
if start then
  start_id = tostring(redis.call('INCR', KEYS[4]))
  redis.call('ZADD', KEYS[6], ms_text(now), start_id)
end
if index then
  local hint = ARGV[13]
  local existing = redis.call('HGET', KEYS[2], run)
  if existing and (hint == '' or existing == hint) then
    member = existing
  else
    member = hint ~= '' and hint or (ARGV[12] .. ':' .. string.format('%016.0f', redis.call('INCR', KEYS[4])) .. ':' .. run)
    if existing then redis.call('ZREM', KEYS[1], existing) end
    redis.call('ZADD', KEYS[1], 0, member)
    redis.call('HSET', KEYS[2], run, member)
  end
  if (tonumber(redis.call('HGET', KEYS[3], run)) or -1) < tonumber(ARGV[15]) then redis.call('HSET', KEYS[3], run, ARGV[15]) end
end
return {'ok', reserved, fresh, start_id, member}`;

/**
 * KEYS as PREP's; ARGV hex-run-id start-id unindex, then owner bound pairs.
 * Gives back what a run no longer needs of its queue: the start `start-id`
 * (a start its write did not use), the run's entry in the ready index
 * unless it was added for a write after step `unindex` ("all": whatever
 * write; '': keep it), and the reservation of each owner when it runs out
 * by `bound` ('': whenever), so one extended since for a later write is kept.
 */
const DROP = `
local run = ARGV[1]
for i = 4, #ARGV, 2 do
  local entry = run .. ':' .. ARGV[i]
  local score = tonumber(redis.call('ZSCORE', KEYS[5], entry))
  if not score or ARGV[i + 1] == '' or score <= tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[5], entry)
    redis.call('ZREM', KEYS[7], entry)
  end
end
if ARGV[2] ~= '' then redis.call('ZREM', KEYS[6], ARGV[2]) end
local added = tonumber(redis.call('HGET', KEYS[3], run)) or -1
if ARGV[3] == 'all' or (ARGV[3] ~= '' and added <= tonumber(ARGV[3])) then
  local member = redis.call('HGET', KEYS[2], run)
  if member then redis.call('ZREM', KEYS[1], member) end
  redis.call('HDEL', KEYS[2], run)
  redis.call('HDEL', KEYS[3], run)
end
return {'ok'}`;

/** KEYS ready; ARGV the last member read ('' from the start), count: the next members, in the queue's order. Reads only. */
const PAGE = `
local from = ARGV[1] == '' and '-' or ('(' .. ARGV[1])
return redis.call('ZRANGE', KEYS[1], from, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[2]))`;

/**
 * KEYS the meta of runs of one bucket; ARGV hex queue, then each run's
 * member in the ready index, in KEYS' order. For each run {name, place} when
 * it is the queue's run at that member and claimable now by this node's
 * clock (running, no decision, no lease or one run out), false otherwise
 * (a run gone, moved on, or an entry of an earlier run of its id). Reads only.
 */
const CHECK = `${NOW}
local now = now_ms()
local out = {}
for i = 1, #KEYS do
  local m = redis.call('HMGET', KEYS[i], 'flow', 'status', 'owner', 'expires', 'decision', 'qname', 'qmember', 'qplace')
  local free = not m[3] or (tonumber(m[4]) or now + 1) <= now
  if m[1] and m[6] == ARGV[1] and m[7] == ARGV[i + 1] and m[2] == 'running' and not m[5] and free then
    out[i] = {m[1], m[8] or ''}
  else
    out[i] = false
  end
end
return out`;

/** The queue scripts' sources: PREP and DROP write the queue's keys, PAGE and CHECK read. */
export const QUEUE_SOURCES: Readonly<Record<"prep" | "drop" | "page" | "check", string>> = {
  prep: PREP,
  drop: DROP,
  page: PAGE,
  check: CHECK,
};
