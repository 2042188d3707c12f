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
 * The run's keys (KEYS 1-3) expire ttl seconds from now once it ended (done
 * or failed; never with ttl 0), and never before: a running run may hold the
 * only evidence of a call in doubt (its worker died and nobody recovered it
 * yet), a paused one waits for a decision. An unfinished run that an earlier
 * version gave an expiry loses it, and its entry in expiring (KEYS[e]). A run
 * that is not to expire and whose keys never did (they are set together) is
 * left as it is: one command, not four that change nothing.
 */
export const EXPIRY: string = `${NOW}
local function expiry(status, ttl, member, e)
  local lasts = (status == 'done' or status == 'failed') and ttl > 0
  if not lasts and redis.call('PTTL', KEYS[1]) == -1 then return end
  for i = 1, 3 do
    if lasts then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
  redis.call('ZREM', KEYS[e], member)
end`;

/**
 * A run's place in its bucket's claimable index (KEYS[c]), found through
 * claimable-of (KEYS[o]): at its lease's expiry (0 when released) while it
 * runs, nowhere (expires false) otherwise. The member is the index member
 * with the expiry, zero-padded, between flow and run, so one flow's runs
 * that are claimable at a time are one lexicographic range.
 */
export const PLACE: string = `
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
