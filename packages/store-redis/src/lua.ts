import type { RunHead, RunKind, RunStatus } from "@durable/core/store";
import { EXPIRY_DIGITS } from "./keys.js";

/**
 * Lua shared by the scripts (scripts.ts, write-script.ts): each script is
 * composed from these, so a rule is written once. KEYS and ARGV are the
 * including script's; a function takes the index of a key it writes.
 */

/** The server's clock, in ms since the epoch: the only clock of leases and expiry. */
export const NOW: string = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms_text(ms) return string.format('%.0f', ms) end`;

/** Hex-encodes a string, as the client does for flows and run ids. */
export const HEX: string = `
local function hex(text)
  return (string.gsub(text, '.', function(c) return string.format('%02x', string.byte(c)) end))
end`;

/**
 * The run's keys (KEYS 1-3: meta cps calls; 9-11: inbox inbox-by-key
 * stream, see `scriptKeys`) expire ttl seconds from now once it ended (done
 * or failed; never with ttl 0), and never before: a running run may hold the
 * only evidence of a call in doubt (its worker died and nobody recovered it
 * yet), a paused one waits for a decision. An unfinished run that an earlier
 * version gave an expiry loses it, and its entry in expiring (KEYS[e]). A run
 * that is not to expire and whose keys never did (they are set together) is
 * left as it is: one command, not six that change nothing.
 */
export const EXPIRY: string = `${NOW}
local function expiry(status, ttl, member, e)
  local lasts = (status == 'done' or status == 'failed') and ttl > 0
  if not lasts and redis.call('PTTL', KEYS[1]) == -1 then return end
  for _, i in ipairs({1, 2, 3, 9, 10, 11}) do
    if lasts then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
  redis.call('ZREM', KEYS[e], member)
end`;

/**
 * A run's place in its bucket's claimable index (KEYS[c]), found through
 * claimable-of (KEYS[o]): at its lease's expiry (0 when released) while it
 * runs, nowhere (expires false) otherwise. The member is the index member
 * with the expiry, zero-padded, between flow and run, so one flow's runs
 * that are claimable at a time are one lexicographic range. A run started
 * on a queue (its meta, KEYS[1], names one) is never there: its queue's
 * ready index lists it, in the queue's order (queue-scripts.ts).
 */
export const PLACE: string = `
local function claimable_member(member, expires)
  local flow, run = string.match(member, '^(%x*):(%x*)$')
  return flow .. ':' .. string.format('%0${EXPIRY_DIGITS}.0f', expires) .. ':' .. run
end
local function place(member, expires, c, o)
  if expires and redis.call('HEXISTS', KEYS[1], 'qname') == 1 then expires = false end
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
 * The run's head, the meta hash (KEYS[1]), checked before any rule reads it:
 * head() gives its fields {flow, kind, step, status, segment, segcalls,
 * owner, expires, decision} (all false for an unknown run) and, for a head
 * no save writes, why, which the script returns as {"corrupt", reason}: a
 * refusal is never decided from it, and no Lua error is raised by it.
 */
export const HEAD: string = `
local function head()
  local m = redis.call('HMGET', KEYS[1], 'flow', 'kind', 'step', 'status', 'segment', 'segcalls', 'owner', 'expires', 'decision')
  local function whole(v) return type(v) == 'string' and string.match(v, '^%d+$') ~= nil end
  local function bad(field, v) return 'holds ' .. (v and cjson.encode(v) or 'nothing') .. ' as its ' .. field end
  if not m[3] then
    for i = 1, 9 do if m[i] then return m, 'holds no step' end end
    return m
  end
  if not whole(m[3]) then return m, bad('step', m[3]) end
  if not whole(m[5]) then return m, bad('segment', m[5]) end
  if not whole(m[6]) then return m, bad('record count', m[6]) end
  if not (m[4] == 'running' or m[4] == 'paused' or m[4] == 'done' or m[4] == 'failed') then return m, bad('status', m[4]) end
  if not (m[2] == 'flow' or m[2] == 'loop') then return m, bad('kind', m[2]) end
  if not m[1] or m[1] == '' then return m, bad('name', m[1]) end
  if m[7] and not whole(m[8]) then return m, bad('lease expiry', m[8]) end
  return m
end`;

/**
 * The head a script returns with a refusal, {step, status, flow, kind,
 * segment} as head() read them, for the protocol's own rule to name why
 * (`renewRefusal`, `eventRefusal`).
 */
export function refusedHead(fields: readonly unknown[]): RunHead {
  const [step, status, flow, kind, segment] = fields;
  return {
    step: Number(step),
    status: status as RunStatus,
    name: String(flow),
    kind: kind as RunKind,
    segment: Number(segment),
  };
}
