import { CheckpointStoreCorrupt } from "../base/errors.js";
import { canonicalJson } from "../base/canonical.js";
import type { Identity } from "../base/identity.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../base/json.js";
import type { CheckpointRow, CheckpointStore, StoredCheckpoint } from "../store/contract.js";
import { applyDelta, diffJson, own, type DeltaOp } from "./delta.js";
import {
  type ChainLink,
  type CheckpointBody,
  type OpenedCheckpoint,
  openCheckpoint,
  rowDigest,
  sealCheckpoint,
} from "./checkpoint.js";
import type { Sealer } from "./sealer.js";

/*
 * A run's checkpoints form a chain: each row seals the digest of the row
 * before it, and holds either the run's whole data (a snapshot) or only what
 * changed since that row (a change). A reader rebuilds a step's data from the
 * newest snapshot at or under it and the changes after it, checking every
 * link, so a change deleted, reordered, altered or spliced from another run
 * breaks the chain and is `CheckpointStoreCorrupt`.
 */

/**
 * How much longer than the data itself the chain a recovery reads (the
 * snapshot and the changes after it) may grow before the next row is a
 * snapshot. Data that only grows (a loop's history) never reaches it: its
 * changes are what it holds. Data that is rewritten (a flow's counter) does.
 */
const CHAIN_TO_DATA = 2;

/** The row to store for `body`, the step after `previous` (the body last sealed or read), and `body`'s link in the chain. */
export function sealNext(
  sealer: Sealer,
  body: CheckpointBody,
  previous: CheckpointBody | undefined,
  changes: { readonly on: boolean; readonly snapshotEvery?: number | undefined },
): { readonly row: CheckpointRow; readonly body: CheckpointBody } {
  const link = previous?.step === body.step - 1 ? previous.chain : undefined;
  const due = link !== undefined && changes.snapshotEvery !== undefined && link.changes >= changes.snapshotEvery;
  if (changes.on && !due && previous !== undefined && link !== undefined) {
    const delta = diffJson(previous.data, body.data);
    const row = sealCheckpoint(sealer, body, { prev: link.digest, base: link.base, delta });
    const chain = changeLink(link, rowDigest(row.sealed), row.sealed.length, grown(previous.data, delta));
    if (chain.snapshotBytes + chain.deltaBytes <= CHAIN_TO_DATA * chain.dataBytes)
      return { row, body: { ...body, chain } };
  }
  const row = sealCheckpoint(sealer, body, link === undefined ? undefined : { prev: link.digest });
  return { row, body: { ...body, chain: snapshotLink(rowDigest(row.sealed), body.step, row.sealed.length) } };
}

/** The link of a snapshot of `bytes` at `step`. */
function snapshotLink(digest: string, step: number, bytes: number): ChainLink {
  return { digest, base: step, snapshotBytes: bytes, deltaBytes: 0, dataBytes: bytes, changes: 0 };
}

/** The link of a change of `bytes` after `link`, whose ops grew the data by about `grown` bytes. */
function changeLink(link: ChainLink, digest: string, bytes: number, grown: number): ChainLink {
  return {
    digest,
    base: link.base,
    snapshotBytes: link.snapshotBytes,
    deltaBytes: link.deltaBytes + bytes,
    dataBytes: Math.max(0, link.dataBytes + grown),
    changes: link.changes + 1,
  };
}

/**
 * About how many bytes `ops` add to `before`'s JSON (less what they replace):
 * the writer and every reader of the chain estimate it alike, so a worker
 * that claims a run decides its next snapshot as the one before it would have.
 */
function grown(before: JsonValue, ops: readonly DeltaOp[]): number {
  let bytes = 0;
  for (const op of ops) {
    if ("push" in op) bytes += size(op.push) - 1;
    else {
      const old = valueAt(before, op.at);
      if ("set" in op) bytes += size(op.set);
      if (old !== undefined) bytes -= size(old);
    }
  }
  return bytes;
}

/**
 * About the length of `value`'s JSON: strings by their length (escapes
 * aside), without writing the text out, since a recovery sizes every change
 * since its snapshot.
 */
function size(value: JsonValue | readonly JsonValue[] | undefined): number {
  if (typeof value === "string") return value.length + 2;
  if (typeof value !== "object" || value === null) return value === undefined ? 0 : String(value).length;
  let bytes = 2;
  if (Array.isArray(value)) {
    for (const item of value) bytes += size(item) + 1;
    return bytes;
  }
  for (const key of Object.keys(value)) {
    const item = (value as JsonObject)[key];
    // Left out, as the canonical encoding leaves out an undefined property.
    if (item !== undefined) bytes += key.length + 4 + size(item);
  }
  return bytes;
}

function valueAt(value: JsonValue, at: readonly (string | number)[]): JsonValue | undefined {
  let here: JsonValue | undefined = value;
  for (const key of at) {
    if (Array.isArray(here)) here = typeof key === "number" ? here[key] : undefined;
    else if (isJsonObject(here) && typeof key === "string") here = own(here, key);
    else return undefined;
  }
  return here;
}

/**
 * The bodies of consecutive rows of one run with their whole data, from the
 * first (which must be a snapshot) on, each link checked: a row that does not
 * follow the one before it, or whose changes do not apply, is
 * `CheckpointStoreCorrupt`. With `lastOnly`, each change is applied in place
 * to the data opened (owned here, shared with no one), so only the last
 * body's data is whole: what a recovery needs, with nothing copied.
 */
function foldCheckpoints(runId: string, rows: readonly OpenedCheckpoint[], lastOnly = false): CheckpointBody[] {
  const bodies: CheckpointBody[] = [];
  let link: ChainLink | undefined;
  let data: JsonValue = null;
  // What a change never seals, as the snapshot before it sealed it.
  let run: Pick<CheckpointBody, "name" | "kind" | "identity"> | undefined;
  for (const [index, row] of rows.entries()) {
    const before = rows[index - 1];
    if (before !== undefined && row.step !== before.step + 1)
      throw new CheckpointStoreCorrupt(runId, `its checkpoints jump from step ${before.step} to ${row.step}.`);
    // With `lastOnly` (a recovery), the rows before the last were opened unverified: each must be sealed by the next.
    if (before !== undefined && (row.prev !== undefined || lastOnly) && row.prev !== link?.digest)
      throw broken(runId, row.step, "does not follow the row before it (its link names another)");
    if ("data" in row) {
      data = row.data;
      link = snapshotLink(row.digest, row.step, row.bytes);
      run = { name: row.name, kind: row.kind, identity: row.identity };
    } else {
      if (link === undefined || run === undefined)
        throw broken(runId, row.step, `holds changes, and its snapshot (step ${row.base}) was not read`);
      if (row.name !== run.name || row.kind !== run.kind || !sameIdentity(row.identity, run.identity))
        throw broken(
          runId,
          row.step,
          `is stored as ${row.kind} "${row.name}", and its snapshot is of ${run.kind} "${run.name}"`,
        );
      if (row.prev === undefined || row.base !== link.base)
        throw broken(runId, row.step, `builds on step ${row.base}, and the chain before it on step ${link.base}`);
      // Measured before the changes apply: in place, they change `data` itself.
      link = changeLink(link, row.digest, row.bytes, grown(data, row.delta));
      const changed = applyDelta(data, row.delta, lastOnly);
      if (changed === undefined) throw broken(runId, row.step, "holds changes that do not apply to the step before it");
      data = changed;
    }
    if (!lastOnly || index === rows.length - 1) {
      const { step, status, segment, calls, streamed } = row;
      bodies.push({
        runId: row.runId,
        step,
        status,
        segment,
        ...run,
        calls,
        ...(streamed === undefined ? {} : { streamed }),
        data,
        chain: link,
      });
    }
  }
  return bodies;
}

/** True when a change seals no identity (as it should), or the snapshot's (as rows of an earlier version did). */
function sameIdentity(sealed: Identity | undefined, snapshot: Identity): boolean {
  return sealed === undefined || canonicalJson(sealed) === canonicalJson(snapshot);
}

function broken(runId: string, step: number, what: string): CheckpointStoreCorrupt {
  return new CheckpointStoreCorrupt(
    runId,
    `the chain of its checkpoints breaks at step ${step}, which ${what}: a row was deleted, reordered, altered or taken from another run.`,
  );
}

/**
 * The run's latest checkpoint with its whole data: the latest row, and when
 * it holds changes, the rows from its snapshot on (`history(runId, from)`),
 * every link checked. The latest row's signature is verified; each row
 * before it is authenticated by the digest the row after it seals (a chain
 * back from a verified row), so its own signature is not checked again.
 */
export async function readLatest(store: CheckpointStore, sealer: Sealer, runId: string): Promise<CheckpointBody> {
  const stored = await store.latest(runId);
  const latest = openCheckpoint(sealer, stored);
  if ("data" in latest) return foldCheckpoints(runId, [latest])[0] as CheckpointBody;
  if (store.history === undefined)
    throw new CheckpointStoreCorrupt(runId, "its latest checkpoint holds changes, and the store reads no history.");
  const rows = (await store.history(runId, latest.base)).filter((row) => row.step <= latest.step);
  const last = rows.at(-1);
  if (last?.step !== latest.step || last.sealed !== stored.sealed)
    throw new CheckpointStoreCorrupt(
      runId,
      `its history does not end with its latest checkpoint (step ${latest.step}).`,
    );
  const from = Math.max(
    rows.findLastIndex((row) => row.step <= latest.base),
    0,
  );
  const earlier = rows.slice(from, -1).map((row) => openCheckpoint(sealer, row, true));
  return foldCheckpoints(runId, [...earlier, latest], true).at(-1) as CheckpointBody;
}

/** Every checkpoint of a run with its whole data (a console's timeline), each link checked. */
export function openHistory(sealer: Sealer, runId: string, rows: readonly StoredCheckpoint[]): CheckpointBody[] {
  return foldCheckpoints(
    runId,
    rows.map((row) => openCheckpoint(sealer, row)),
  );
}
