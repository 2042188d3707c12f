import { BUCKETS, hex, INDEX_VERSION, type IndexKeys, indexKeys, runIdOf, runKeys } from "./keys.js";
import { SCRIPTS, type Script } from "./scripts.js";

/** Runs one of the store's scripts (see `RedisCheckpointStore`). */
export type Evaluate = (script: Script, keys: string[], args: string[]) => Promise<unknown>;

// Ids per bucket per round trip: a listing holds up to BUCKETS × PAGE ids at once, a small part of 10,000.
const PAGE = 100;

/** One page of a bucket's index: the run ids in it, and where the next page starts (undefined: the bucket is done). */
interface Page<Cursor> {
  readonly ids: readonly string[];
  readonly next: Cursor | undefined;
}

/** Where a claimable listing stands in a bucket: the last entry read, and the listing's now ('' before the first page). */
interface ClaimableCursor {
  readonly after: string;
  readonly now: string;
}

/**
 * The ids of `flow`'s unfinished runs, or with `claimable` only its claimable
 * ones: every bucket a page at a time, one script per page and bucket, so at
 * most BUCKETS pages are held at once.
 */
export function listRuns(evaluate: Evaluate, prefix: string, flow: string, claimable: boolean): AsyncIterable<string> {
  if (claimable)
    return eachBucket<ClaimableCursor>({ after: "", now: "" }, (bucket, cursor) =>
      claimablePage(evaluate, prefix, bucket, hex(flow), cursor),
    );
  return eachBucket<string>("", async (bucket, after) => {
    const { members, last, read } = await unfinishedPage(evaluate, indexKeys(prefix, bucket), hex(flow), after);
    return { ids: members.map(runIdOf), next: read < PAGE ? undefined : last };
  });
}

async function* eachBucket<Cursor>(
  start: Cursor,
  read: (bucket: number, cursor: Cursor) => Promise<Page<Cursor>>,
): AsyncIterable<string> {
  const cursors = new Map<number, Cursor>(Array.from({ length: BUCKETS }, (_, b) => [b, start]));
  while (cursors.size > 0) {
    const pages = await Promise.all(
      [...cursors].map(async ([bucket, cursor]) => ({ bucket, page: await read(bucket, cursor) })),
    );
    for (const { bucket, page } of pages) {
      yield* page.ids;
      if (page.next === undefined) cursors.delete(bucket);
      else cursors.set(bucket, page.next);
    }
  }
}

/** A page of a bucket's unfinished index ('' flow: every flow's), skipping runs that expired. Reads only. */
async function unfinishedPage(
  evaluate: Evaluate,
  keys: IndexKeys,
  hexFlow: string,
  after: string,
): Promise<{ members: string[]; last: string; read: number }> {
  const reply = await evaluate(SCRIPTS.page, [keys.unfinished, keys.expiring], [hexFlow, after, String(PAGE)]);
  const [last, members, read] = reply as [string, string[], number];
  return { members, last, read: Number(read) };
}

/**
 * A page of a bucket's claimable index. The listing's now is the server's
 * clock at its first page in the bucket, kept for the rest: a lease is only
 * ever moved to a later expiry or to 0, so no run is listed twice.
 */
async function claimablePage(
  evaluate: Evaluate,
  prefix: string,
  bucket: number,
  hexFlow: string,
  cursor: ClaimableCursor,
): Promise<Page<ClaimableCursor>> {
  const keys = indexKeys(prefix, bucket);
  const args = [hexFlow, cursor.after, String(PAGE), cursor.now];
  let reply = (await evaluate(SCRIPTS.claimablePage, [keys.claimable, keys.expiring, keys.schema], args)) as string[];
  if (reply[0] === "migrate") {
    await backfill(evaluate, prefix, bucket);
    reply = (await evaluate(SCRIPTS.claimablePage, [keys.claimable, keys.expiring, keys.schema], args)) as string[];
  }
  const [, last, members, read, now] = reply as unknown as ["page", string, string[], number, string];
  return { ids: members.map(runIdOf), next: Number(read) < PAGE ? undefined : { after: last, now } };
}

/**
 * Brings a bucket written before leases up to date: each running run of its
 * unfinished index joins the claimable index (with no lease: none was ever
 * taken), then the bucket is marked current. Each step is atomic and may be
 * repeated, so listings that race do no harm.
 */
async function backfill(evaluate: Evaluate, prefix: string, bucket: number): Promise<void> {
  const keys = indexKeys(prefix, bucket);
  let after = "";
  for (;;) {
    const { members, last, read } = await unfinishedPage(evaluate, keys, "", after);
    await Promise.all(
      members.map((member) => {
        const run = runKeys(prefix, runIdOf(member));
        return evaluate(SCRIPTS.adopt, [run.meta, run.claimable, run.claimableOf], [member]);
      }),
    );
    if (read < PAGE) break;
    after = last;
  }
  await evaluate(SCRIPTS.migrated, [keys.schema], [INDEX_VERSION]);
}
