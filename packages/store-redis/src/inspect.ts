import {
  checkRunQuery,
  matchesRunQuery,
  newestFirst,
  type ResolvedRunQuery,
  type RunKind,
  type RunPage,
  type RunPosition,
  type RunQuery,
  type RunStatus,
  type RunSummary,
  runCursor,
} from "@durable/core/store";
import { BUCKETS, hex, indexKeys, runKeys } from "./keys.js";
import type { Evaluate } from "./listing.js";
import { script } from "./scripts.js";

/**
 * KEYS recent of a bucket; ARGV the highest score to read ('+inf' from the
 * start), the hex id listed last at that score ('' from the start), count.
 * Returns {hex id, score, …} newest first, then by id from the highest, past
 * the cursor, at least count of them unless the index ends first, and 1 when
 * it ended. Reads only.
 */
const RECENT = script(
  `
local max, after, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out, offset = {}, 0
while true do
  local page = redis.call('ZRANGE', KEYS[1], max, '-inf', 'BYSCORE', 'REV', 'LIMIT', offset, count, 'WITHSCORES')
  for i = 1, #page, 2 do
    if not (after ~= '' and page[i + 1] == max and page[i] >= after) then
      out[#out + 1] = page[i]
      out[#out + 1] = page[i + 1]
    end
  end
  offset = offset + #page / 2
  if #page < count * 2 then return {out, 1} end
  if #out >= count * 2 then return {out, 0} end
end`,
  false,
);

/** KEYS the meta of runs of one bucket: each run's head fields, all false for a run that is gone. Reads only. */
const HEADS = script(
  `
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('HMGET', key, 'flow', 'kind', 'step', 'status', 'segment', 'owner', 'expires')
end
return out`,
  false,
);

/** KEYS recent of a bucket; ARGV hex ids of runs that are gone (their keys expired): drops them from the index. */
const FORGET = script(
  `
redis.call('ZREM', KEYS[1], unpack(ARGV))
return {'ok'}`,
  true,
);

/** What one bucket gave for a page: its matching runs, and where it stopped reading (undefined: it has no more). */
interface BucketRead {
  readonly matches: readonly RunSummary[];
  readonly frontier: RunPosition | undefined;
}

/** Rounds of bucket reads one `listRuns` makes at most before it returns a short page with a cursor. */
const ROUNDS = 8;

/**
 * A page of runs, newest first (`CheckpointStore.listRuns`): each bucket's
 * `recent` index is read from the cursor, its runs' heads read and filtered,
 * and the buckets merged. A run is listed only once every bucket has read
 * past its place, so pages never skip one; a round that finds fewer runs
 * than the page holds reads on, and after a few rounds a short page with a
 * cursor is returned.
 */
export async function listRecent(evaluate: Evaluate, prefix: string, query: RunQuery | undefined): Promise<RunPage> {
  const q = checkRunQuery(query);
  const runs: RunSummary[] = [];
  let after = q.after;
  for (let round = 0; round < ROUNDS; round++) {
    const reads = await Promise.all(
      Array.from({ length: BUCKETS }, (_, bucket) => readBucket(evaluate, prefix, bucket, q, after)),
    );
    // The newest place a bucket stopped at: every bucket has read everything newer.
    const cutoff = reads
      .map((read) => read.frontier)
      .filter((frontier) => frontier !== undefined)
      .sort(newestFirst)[0];
    const safe = reads
      .flatMap((read) => read.matches)
      .filter((run) => cutoff === undefined || newestFirst(run, cutoff) <= 0)
      .sort(newestFirst);
    const wanted = q.limit - runs.length;
    runs.push(...safe.slice(0, wanted));
    const last = runs.at(-1);
    if (safe.length > wanted && last !== undefined) return { runs, next: runCursor(last) };
    if (cutoff === undefined) return { runs };
    after = cutoff;
    if (runs.length === q.limit) return { runs, next: runCursor(cutoff) };
  }
  return after === undefined ? { runs } : { runs, next: runCursor(after) };
}

async function readBucket(
  evaluate: Evaluate,
  prefix: string,
  bucket: number,
  q: ResolvedRunQuery,
  after: RunPosition | undefined,
): Promise<BucketRead> {
  const { recent } = indexKeys(prefix, bucket);
  const args = [after === undefined ? "+inf" : String(after.updatedAt), after === undefined ? "" : hex(after.runId)];
  const [flat, ended] = (await evaluate(RECENT, [recent], [...args, String(Math.max(q.limit + 1, 50))])) as [
    string[],
    number,
  ];
  const entries: Array<{ runId: string; hexId: string; updatedAt: number }> = [];
  for (let i = 0; i < flat.length; i += 2) {
    const hexId = flat[i] ?? "";
    entries.push({ runId: Buffer.from(hexId, "hex").toString("utf8"), hexId, updatedAt: Number(flat[i + 1]) });
  }
  const heads = (
    entries.length === 0
      ? []
      : await evaluate(
          HEADS,
          entries.map((entry) => runKeys(prefix, entry.runId).meta),
          [],
        )
  ) as Array<Array<string | null | false>>;
  const matches: RunSummary[] = [];
  const gone: string[] = [];
  entries.forEach((entry, i) => {
    const run = summary(entry, heads[i]);
    if (run === undefined) gone.push(entry.hexId);
    else if (matchesRunQuery({ ...q, after: undefined }, run)) matches.push(run);
  });
  // Runs whose keys expired: dropped from the index, unless the client may only read.
  if (gone.length > 0) await evaluate(FORGET, [recent], gone).catch(() => undefined);
  const last = entries.at(-1);
  return { matches, frontier: Number(ended) === 1 || last === undefined ? undefined : last };
}

function summary(
  entry: { runId: string; updatedAt: number },
  head: Array<string | null | false> | undefined,
): RunSummary | undefined {
  const [flow, kind, step, status, segment, owner, expires] = head ?? [];
  if (typeof flow !== "string" || typeof status !== "string") return undefined;
  const run = {
    runId: entry.runId,
    name: flow,
    kind: kind as RunKind,
    step: Number(step),
    status: status as RunStatus,
    segment: Number(segment),
    updatedAt: entry.updatedAt,
  };
  return typeof owner === "string" && owner !== "" && typeof expires === "string"
    ? { ...run, lease: { owner, expiresAt: Number(expires) } }
    : run;
}
