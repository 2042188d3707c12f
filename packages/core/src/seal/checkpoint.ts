import { isJsonObject, type JsonValue } from "../base/json.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { Sealer, type CheckpointKeys, type EncryptionKeys } from "./sealer.js";
import type { CheckpointRow, CheckpointStore, RunKind, RunStatus, StoredCheckpoint } from "../store/contract.js";
import type { Identity } from "../base/identity.js";
import { isSegmentCounts, type SegmentCounts } from "../store/contract.js";
import { checkedCheckpoint } from "../store/rows.js";
import { isDelta, type DeltaOp } from "./delta.js";
import { hash } from "node:crypto";

/** Everything sealed into one checkpoint. `data` is the runner's own (a flow's state and frontier, a loop's history). */
export interface CheckpointBody {
  readonly runId: string;
  readonly step: number;
  readonly status: RunStatus;
  readonly segment: number;
  /** The run's name (sealed under the key `flow`, as every version has sealed it). */
  readonly name: string;
  readonly kind: RunKind;
  /** The end user, thread and principal the run acts for. */
  readonly identity: Identity;
  /**
   * How many call records the writer knew to be stored in each segment, by
   * segment number (its own segment last): a read that finds fewer in any
   * segment is corrupt.
   */
  readonly calls: SegmentCounts;
  /**
   * How many parts the run's stream held when the row was sealed (every part
   * its writer wrote before it: see docs/protocol.md, "Streams"); absent on
   * runs that never streamed. Parts past it when a worker claims the run are
   * of a drive that was cut off.
   */
  readonly streamed?: number;
  /** The run's whole data at this step, rebuilt from the snapshot and changes under it when the row is a change. */
  readonly data: JsonValue;
  /** Where the row sits in its run's chain of checkpoints: set on every body a read rebuilt or a runner sealed. */
  readonly chain?: ChainLink;
}

/** What a checkpoint row is in its run's chain: what the next row seals to follow it, and what its data was built from. */
export interface ChainLink {
  /** The digest of the row's sealed text (SHA-256, base64url): the next row seals it as `prev`. */
  readonly digest: string;
  /** The step of the snapshot the row's data builds on: its own step when the row is one. */
  readonly base: number;
  /** Sealed bytes of that snapshot, and of the changes after it up to this row: what a recovery reads. */
  readonly snapshotBytes: number;
  readonly deltaBytes: number;
  /** About how many bytes the data itself holds (its canonical JSON). */
  readonly dataBytes: number;
  /** How many changes follow the snapshot up to this row. */
  readonly changes: number;
}

/**
 * A checkpoint row as opened, before its data is rebuilt: a snapshot holds
 * `data`, a change holds `delta`, the changes since the row before it (step
 * `step - 1`, whose digest it seals as `prev`) over the snapshot at `base`.
 * A change seals no name, kind or identity (they never change in a run): its
 * name and kind are the store's columns, checked against the snapshot's
 * when the chain is folded, and its identity is the snapshot's.
 */
export type OpenedCheckpoint = Omit<CheckpointBody, "data" | "chain" | "identity"> & {
  /** The digest of the sealed row, and its length. */
  readonly digest: string;
  readonly bytes: number;
  readonly prev?: string;
} & (
    | { readonly data: JsonValue; readonly identity: Identity }
    | { readonly delta: readonly DeltaOp[]; readonly base: number; readonly identity?: Identity }
  );

const STATUSES: ReadonlySet<unknown> = new Set(["running", "paused", "done", "failed"]);
const KINDS: ReadonlySet<unknown> = new Set(["flow", "loop"]);
/** The plain columns a store keeps beside a checkpoint, each checked against the sealed one. */
const COLUMNS = ["runId", "step", "status", "segment", "name", "kind"] as const;

/**
 * The sealer a runner uses with a store: signed with `keys`, or unsigned when
 * no key is given and the store never leaves this process; encrypted with
 * `encryptionKey` when given. A runner writes, so a reader's keys (Ed25519
 * public keys only) are `InvalidInput`.
 */
export function sealerFor(
  store: CheckpointStore,
  keys: CheckpointKeys | undefined,
  encryptionKey?: EncryptionKeys,
): Sealer {
  let sealer: Sealer;
  if (keys !== undefined) sealer = Sealer.withKeys(keys, encryptionKey);
  else if (store.inProcessOnly === true) sealer = Sealer.unsigned(encryptionKey);
  else
    throw new InvalidInput(
      "checkpointKey is required with a store that other processes can read, so each of them can check what it reads. " +
        "Give the same key (at least 32 random bytes, or an Ed25519 private key) to every worker.",
    );
  if (!sealer.canSeal)
    throw new InvalidInput(
      "checkpointKey: the first key is an Ed25519 public key, which verifies but cannot sign. " +
        "Workers need the private key; readers open runs with Sealer.withKeys(publicKey).",
    );
  return sealer;
}

/**
 * Seals a checkpoint into the row a store keeps: its whole data (a snapshot),
 * or with `change` the changes since the row it follows (digest `prev`) over
 * the snapshot at step `base`. State that is not plain JSON is `InvalidInput`;
 * nothing is written.
 */
export function sealCheckpoint(
  sealer: Sealer,
  body: CheckpointBody,
  change?: { readonly prev: string; readonly base?: number; readonly delta?: readonly DeltaOp[] },
): CheckpointRow {
  const { runId, step, status, segment, name, kind, identity, calls, data, streamed } = body;
  const row = { runId, step, status, segment, name, kind };
  const content =
    change?.delta === undefined
      ? {
          runId,
          step,
          status,
          segment,
          flow: name,
          kind,
          identity,
          calls,
          streamed,
          data,
          ...(change && { prev: change.prev }),
        }
      : { runId, step, status, segment, calls, streamed, delta: change.delta, base: change.base, prev: change.prev };
  return {
    status: body.status,
    segment: body.segment,
    name,
    kind: body.kind,
    sealed: sealer.seal("checkpoint", content, "checkpoint", row),
  };
}

/** The digest a following row seals as `prev`: SHA-256 of the sealed text, base64url. */
export function rowDigest(sealed: string): string {
  return hash("sha256", sealed, "base64url");
}

/**
 * Verifies a stored row and returns what is sealed in it. A bad signature, or
 * a plain column that differs from the sealed content, is `CheckpointStoreCorrupt`.
 * With `chained`, the signature is left to the chain: the row's digest must
 * be sealed by a later row that was verified (`readLatest` checks it).
 */
export function openCheckpoint(sealer: Sealer, stored: StoredCheckpoint, chained = false): OpenedCheckpoint {
  // A store of another make may give any shape: it is checked as the built-in stores check what they read.
  const row = checkedCheckpoint(stored.runId, stored);
  const opened = sealer.open("checkpoint", row.sealed, row, chained);
  if (!isSealedBody(opened)) throw new CheckpointStoreCorrupt(row.runId, "a stored checkpoint has an unknown shape.");
  const sealed: SealedBody = opened;
  // Built field by field, not spread: a recovery opens every row since its snapshot, and a spread costs more than the parse.
  const digest = rowDigest(row.sealed);
  const bytes = row.sealed.length;
  const { runId, step, status, segment, calls, prev, streamed } = sealed;
  const body: OpenedCheckpoint =
    "data" in sealed
      ? {
          runId,
          step,
          status,
          segment,
          name: sealed.flow,
          kind: sealed.kind,
          identity: sealed.identity,
          calls,
          ...(streamed === undefined ? {} : { streamed }),
          digest,
          bytes,
          prev,
          data: sealed.data,
        }
      : {
          runId,
          step,
          status,
          segment,
          // Sealed by rows of an earlier version: checked against the columns here, and against the snapshot's when folded.
          name: sealed.flow ?? row.name,
          kind: sealed.kind ?? row.kind,
          identity: sealed.identity,
          calls,
          ...(streamed === undefined ? {} : { streamed }),
          digest,
          bytes,
          prev,
          delta: sealed.delta,
          base: sealed.base,
        };
  for (const column of COLUMNS) {
    if (body[column] !== row[column]) {
      throw new CheckpointStoreCorrupt(
        row.runId,
        `the stored ${column} (${JSON.stringify(row[column])}) differs from the sealed one (${JSON.stringify(body[column])}).`,
      );
    }
  }
  return body;
}

/** A checkpoint body as it is sealed: the run's name under `flow`; a change without name, kind and identity. */
type SealedBody = Pick<CheckpointBody, "runId" | "step" | "status" | "segment" | "calls" | "streamed"> & {
  readonly prev?: string;
} & (
    | { readonly flow: string; readonly kind: RunKind; readonly identity: Identity; readonly data: JsonValue }
    | {
        readonly flow?: string;
        readonly kind?: RunKind;
        readonly identity?: Identity;
        readonly delta: readonly DeltaOp[];
        readonly base: number;
      }
  );

function isSealedBody(value: JsonValue): value is JsonValue & SealedBody {
  if (!isJsonObject(value)) return false;
  const change = !("data" in value);
  const omitted = (key: string) => change && value[key] === undefined;
  const identity = value["identity"];
  return (
    typeof value["runId"] === "string" &&
    Number.isSafeInteger(value["step"]) &&
    STATUSES.has(value["status"]) &&
    Number.isSafeInteger(value["segment"]) &&
    (omitted("flow") || typeof value["flow"] === "string") &&
    (omitted("kind") || KINDS.has(value["kind"])) &&
    isSegmentCounts(value["calls"]) &&
    value["calls"].length === (value["segment"] as number) + 1 &&
    (omitted("identity") || isJsonObject(identity)) &&
    (value["prev"] === undefined || typeof value["prev"] === "string") &&
    (value["streamed"] === undefined ||
      (Number.isSafeInteger(value["streamed"]) && (value["streamed"] as number) >= 0)) &&
    (change
      ? isDelta(value["delta"]) &&
        typeof value["prev"] === "string" &&
        Number.isSafeInteger(value["base"]) &&
        (value["base"] as number) >= 0 &&
        (value["base"] as number) < (value["step"] as number)
      : !("delta" in value))
  );
}
