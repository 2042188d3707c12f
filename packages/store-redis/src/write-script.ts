import {
  CheckpointConflict,
  CheckpointNotFound,
  checkedCheckpoint,
  CheckpointStoreCorrupt,
  LeaseHeld,
  type RunWrite,
  SAVE_RENEWS_AFTER,
  type StoredCheckpoint,
  UNFINISHED,
  WAITING,
} from "@durable/core/store";
import { corruptOr } from "./errors.js";
import { EXPIRY, HEAD, HEX, PLACE } from "./lua.js";
import { QUEUED } from "./queue-scripts.js";

/**
 * The one script that writes a run: `save` and `recordCall` are a batch of
 * one, `commit` a batch of many. It first checks every write in order, over
 * the run as the writes before it leave it, and returns the first refusal
 * before any write; then it applies them all. So a refused batch writes
 * nothing, and each rule is written once.
 *
 * KEYS meta cps calls unfinished expiring claimable claimable-of recent
 * inbox inbox-by-key stream (`scriptKeys`); ARGV ttl hex-run-id, the queue terms
 * (queues.ts: hex queue, reserved until, skew, start id, the step it was
 * added to the ready index for, member, and a new run's place and flags),
 * then each write:
 * "r" segment seq sealed, or "s" step status segment flow kind sealed owner
 * ms takeover waits ("1": saved waiting for a decision, left out of the
 * claimable index) events (how many events of the inbox a wait saw).
 * Returns {"ok"}, {"notfound"}, {"conflict", reason}, {"leaseheld", owner,
 * expiresAt, now}, or {"corrupt", reason} for a malformed head (nothing written).
 *
 * A record retried with the same envelope is accepted and not written again.
 * A claim of a run whose live lease another owner holds is refused unless
 * takeover is "1"; an accepted running save with ms > 0 sets the lease, any
 * other releases it, and so does a save for WAITING whose events are fewer
 * than the inbox holds (leaseAfterSave). A batch holds one save at most, and records leave the
 * lease alone: the lease a save reads is the run's before the batch. A batch
 * with a save also drops up to 100 index entries of the bucket whose runs
 * expired: the only place stale entries are cleaned up (reads skip them).
 *
 * A save of a run started on a queue (its step 0 named one: the terms' place)
 * needs what the terms bring from the queue (queue-scripts.ts, PREP): a
 * reservation, when it sets or extends a drive's lease in a queue that limits
 * slots (the lease is then cut to the reservation's end less the skew); a
 * recorded start, when that is a take (`isTake`) at step 0 or 1 of a queue
 * with a rate; an add to the ready index for its step, when it leaves the
 * run running and waiting for no decision while it was out. Lacking one, it
 * writes nothing and returns {"queue", place, member, slot, start, index},
 * "1" for each that is needed, for the client to bring it and send the
 * write again. Accepted, it returns {"ok", slot used, start used, add used,
 * owner whose reservation to drop, index entry to drop ("all", or unless
 * added for a write after this step), place}.
 */
export const WRITE: string = `${EXPIRY}${PLACE}${HEX}${HEAD}${QUEUED}
local ttl = tonumber(ARGV[1])
local now = now_ms()
local m, bad = head()
if bad then return {'corrupt', bad} end
-- The run as the writes checked so far leave it (step nil: nothing stored); count: records of its segment.
local flow, kind, step, status, segment, count = m[1], m[2], m[3], m[4], m[5], tonumber(m[6])
local calls, pending, s = {}, {}, nil
local i = 11
while i <= #ARGV do
  if ARGV[i] == 'r' then
    local seg, seq, sealed = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3]
    i = i + 4
    if not step then return {'notfound'} end
    if status == 'done' or status == 'failed' then return {'conflict', 'the run ended (' .. status .. '); it takes no more calls.'} end
    if seg ~= tonumber(segment) then
      return {'conflict', 'call-log segment ' .. seg .. ' is not the run\\'s current one (' .. segment .. '): this worker was cut off.'}
    end
    local field = seg .. ':' .. seq
    if not (seq < count and (pending[field] or redis.call('HGET', KEYS[3], field)) == sealed) then
      if seq ~= count then
        return {'conflict', 'call record ' .. seq .. ' of segment ' .. seg .. ' is not the next one (' .. count .. ').'}
      end
      pending[field] = sealed
      calls[#calls + 1] = field
      calls[#calls + 1] = sealed
      count = count + 1
    end
  else
    s = i
    i = i + 12
    local new, seg = tonumber(ARGV[s + 1]), tonumber(ARGV[s + 3])
    if not step then
      if new ~= 0 then return {'conflict', 'nothing is stored, so the first step must be 0, not ' .. new .. '.'} end
    else
      -- A failed run may be claimed again (a raised segment): that is a retry (saveRefusal).
      if status == 'done' or (status == 'failed' and seg <= tonumber(segment)) then
        return {'conflict', 'the run ended (' .. status .. ').'}
      end
      if flow ~= ARGV[s + 4] or kind ~= ARGV[s + 5] then return {'conflict', 'the run belongs to ' .. kind .. ' "' .. flow .. '".'} end
      if new ~= tonumber(step) + 1 then
        return {'conflict', 'step ' .. new .. ' is not the next one (' .. (tonumber(step) + 1) .. '): another worker holds the run.'}
      end
      if seg < tonumber(segment) then
        return {'conflict', 'segment ' .. seg .. ' is older than the run\\'s (' .. segment .. '): this worker was cut off.'}
      end
      local held = m[7] and m[7] ~= '' and tonumber(m[8]) > now
      if seg > tonumber(segment) and held and m[7] ~= ARGV[s + 7] and ARGV[s + 9] ~= '1' then
        return {'leaseheld', m[7], m[8], ms_text(now)}
      end
    end
    if not step or seg ~= tonumber(segment) then count = 0 end
    flow, kind, step, status, segment = ARGV[s + 4], ARGV[s + 5], new, ARGV[s + 2], seg
  end
end
-- Every write is accepted. Only retried records: nothing to write.
if not s and #calls == 0 then return {'ok'} end
-- The lease the save leaves (leaseAfterSave): owner until expires, kept when it is the owner's own as it was.
local owner, expires, kept = false, false, false
if s then
  local ms = tonumber(ARGV[s + 8])
  -- A wait that saw fewer events than the inbox holds takes no lease: an event came meanwhile.
  if ARGV[s + 7] == '${WAITING}' and tonumber(ARGV[s + 11]) < redis.call('LLEN', KEYS[9]) then ms = 0 end
  if status == 'running' and ms > 0 then
    -- The owner's lease stays as it is while less than a third of it passed.
    local held = m[7] == ARGV[s + 7] and tonumber(m[8])
    kept = held and held <= now + ms and held - now >= ms * ${1 - SAVE_RENEWS_AFTER}
    owner, expires = ARGV[s + 7], kept and held or now + ms
  end
end
-- The run's queue: the one its meta names, or for a new run the place its step 0 gives.
local q = s and queue_of()
if s and not m[3] and ARGV[9] ~= '' then
  q = {name = ARGV[3], place = ARGV[9], member = '', out = true, flags = ARGV[10], new = true}
end
local listed = s and status == 'running' and ARGV[s + 10] ~= '1'
local used = {}
if q then
  local mine = ARGV[3] == q.name
  local takes = drive(owner) and not kept
  local slot = takes and has(q.flags, 's')
  local start = takes and has(q.flags, 'r') and not (m[7] == owner and tonumber(m[8]) > now) and step <= 1
  local add = listed and q.out
  local cap = mine and ARGV[4] ~= '' and tonumber(ARGV[4]) - tonumber(ARGV[5])
  local need = {
    slot and not (cap and cap > now),
    start and not (mine and ARGV[6] ~= ''),
    add and not (mine and ARGV[8] ~= '' and tonumber(ARGV[7]) == step),
  }
  if need[1] or need[2] or need[3] then
    return {'queue', q.place, q.member, need[1] and '1' or '', need[2] and '1' or '', need[3] and '1' or ''}
  end
  if slot then expires = math.min(expires, cap) end
  used = {slot and '1' or '', start and '1' or '', add and '1' or ''}
end
local member = hex(flow) .. ':' .. ARGV[2]
if #calls > 0 then redis.call('HSET', KEYS[3], unpack(calls)) end
local reply = {'ok'}
if not s then
  redis.call('HSET', KEYS[1], 'segcalls', count)
else
  redis.call('HSET', KEYS[2], ARGV[s + 1], cjson.encode({status, segment, flow, kind, ARGV[s + 6]}))
  redis.call('HSET', KEYS[1], 'flow', flow, 'kind', kind, 'step', step, 'status', status, 'segment', segment, 'segcalls', count)
  redis.call('ZADD', KEYS[8], ms_text(now), ARGV[2])
  if ${UNFINISHED.map((status) => `status == '${status}'`).join(" or ")} then redis.call('ZADD', KEYS[4], 0, member) else redis.call('ZREM', KEYS[4], member) end
  if q then
    -- Before the lease's place: a queued run stays out of the claimable index.
    if q.new then redis.call('HSET', KEYS[1], 'qname', q.name, 'qplace', q.place, 'qflags', q.flags, 'qmember', ARGV[8], 'qout', '1') end
    -- Out of the ready index: its entry is dropped after, unless an add for a later write came (DROP).
    local unindex = ''
    if used[3] == '1' then
      redis.call('HSET', KEYS[1], 'qmember', ARGV[8])
      redis.call('HDEL', KEYS[1], 'qout')
    elseif not listed and (q.new or not q.out) then
      redis.call('HSET', KEYS[1], 'qout', '1')
      unindex = status == 'done' and 'all' or tostring(step)
    end
    local dropped = has(q.flags, 's') and drive(m[7]) and m[7] ~= owner and m[7] or ''
    reply = {'ok', used[1], used[2], used[3], dropped, unindex, q.place}
  end
  if owner then
    if not kept then
      redis.call('HSET', KEYS[1], 'owner', owner, 'expires', ms_text(expires))
      place(member, expires, 6, 7)
    end
  else
    redis.call('HDEL', KEYS[1], 'owner', 'expires')
    place(member, status == 'running' and 0, 6, 7)
  end
  if ARGV[s + 10] == '1' then
    -- Waiting for a decision: out of the claimable index until a save without the mark.
    redis.call('HSET', KEYS[1], 'decision', '1')
    place(member, false, 6, 7)
  elseif m[9] then
    redis.call('HDEL', KEYS[1], 'decision')
  end
end
expiry(status, ttl, member, 5)
if s then
  local stale = redis.call('ZRANGE', KEYS[5], '-inf', '(' .. ms_text(now), 'BYSCORE', 'LIMIT', 0, 100)
  if #stale > 0 then
    redis.call('ZREM', KEYS[4], unpack(stale))
    redis.call('ZREM', KEYS[5], unpack(stale))
    for _, entry in ipairs(redis.call('HMGET', KEYS[7], unpack(stale))) do
      if entry then redis.call('ZREM', KEYS[6], entry) end
    end
    redis.call('HDEL', KEYS[7], unpack(stale))
  end
end
return reply`;

/** The ARGV of the write script: the run's TTL and hex id, the queue terms (8 fields), then the fields of each write in order. */
export function writeArgs(
  ttlSeconds: number,
  hexRunId: string,
  writes: readonly RunWrite[],
  terms: readonly string[],
): string[] {
  const args = [String(ttlSeconds), hexRunId, ...terms];
  for (const write of writes) {
    if (write.kind === "record") {
      args.push("r", String(write.segment), String(write.seq), write.sealed);
      continue;
    }
    const { step, row, lease } = write;
    args.push(
      "s",
      String(step),
      row.status,
      String(row.segment),
      row.name,
      row.kind,
      row.sealed,
      lease?.owner ?? "",
      String(lease?.ms ?? 0),
      lease?.takeOver === true ? "1" : "",
      row.waitsForDecision === true ? "1" : "",
      String(lease?.events ?? 0),
    );
  }
  return args;
}

/**
 * What the write script's reply means: nothing for {"ok", …}, or its refusal
 * thrown: {"notfound"}, {"conflict", reason}, {"leaseheld", owner,
 * expiresAt, now} or {"corrupt", reason}.
 */
export function writeVerdict(runId: string, reply: unknown): void {
  const [verdict, reason, expiresAt, now] = corruptOr(runId, reply) as [string, string | undefined, string?, string?];
  if (verdict === "ok") return;
  if (verdict === "notfound") throw new CheckpointNotFound(runId);
  if (verdict === "leaseheld") throw new LeaseHeld(runId, String(reason), Number(expiresAt), Number(now));
  throw new CheckpointConflict(runId, reason ?? "refused.");
}

/** A checkpoint row as the script above keeps it in the `cps` hash (JSON [status, segment, name, kind, sealed]); another shape is corrupt. */
export function checkpointOf(runId: string, step: string, text: string): StoredCheckpoint {
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch (cause) {
    throw new CheckpointStoreCorrupt(runId, "a stored checkpoint row is not JSON.", { cause });
  }
  if (!Array.isArray(row) || row.length !== 5)
    throw new CheckpointStoreCorrupt(runId, "a stored checkpoint row is not [status, segment, name, kind, sealed].");
  const [status, segment, name, kind, sealed] = row as unknown[];
  return checkedCheckpoint(runId, { step, status, segment, name, kind, sealed });
}
