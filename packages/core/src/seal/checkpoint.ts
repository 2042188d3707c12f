import type { JsonValue } from "../base/json.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { Sealer, type CheckpointKeys, type EncryptionKeys } from "./sealer.js";
import type { CheckpointRow, CheckpointStore, RunKind, RunStatus, StoredCheckpoint } from "../store/contract.js";
import type { Identity } from "../base/identity.js";
import { isSegmentCounts, type SegmentCounts } from "../store/contract.js";
import { checkedCheckpoint } from "../store/rows.js";

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
  readonly data: JsonValue;
}

const STATUSES: ReadonlySet<unknown> = new Set(["running", "paused", "done", "failed"]);
const KINDS: ReadonlySet<unknown> = new Set(["flow", "loop"]);

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

/** Seals a checkpoint into the row a store keeps. State that is not plain JSON is `InvalidInput`; nothing is written. */
export function sealCheckpoint(sealer: Sealer, body: CheckpointBody): CheckpointRow {
  const { name, ...rest } = body;
  const row = { runId: body.runId, step: body.step, status: body.status, segment: body.segment, name, kind: body.kind };
  return {
    status: body.status,
    segment: body.segment,
    name,
    kind: body.kind,
    sealed: sealer.seal("checkpoint", { ...rest, flow: name }, "checkpoint", row),
  };
}

/**
 * Verifies a stored row and returns what is sealed in it. A bad signature, or
 * a plain column that differs from the sealed content, is `CheckpointStoreCorrupt`.
 */
export function openCheckpoint(sealer: Sealer, stored: StoredCheckpoint): CheckpointBody {
  // A store of another make may give any shape: it is checked as the built-in stores check what they read.
  const row = { ...checkedCheckpoint(stored.runId, stored), runId: stored.runId };
  const sealed = sealer.open("checkpoint", row.sealed, row);
  if (!isSealedBody(sealed)) throw new CheckpointStoreCorrupt(row.runId, "a stored checkpoint has an unknown shape.");
  const { flow: name, ...rest }: SealedBody = sealed;
  const body: CheckpointBody = { ...rest, name };
  const columns = ["runId", "step", "status", "segment", "name", "kind"] as const;
  for (const column of columns) {
    if (body[column] !== row[column]) {
      throw new CheckpointStoreCorrupt(
        row.runId,
        `the stored ${column} (${JSON.stringify(row[column])}) differs from the sealed one (${JSON.stringify(body[column])}).`,
      );
    }
  }
  return body;
}

/** A checkpoint body as it is sealed: the run's name under `flow`. */
type SealedBody = Omit<CheckpointBody, "name"> & { readonly flow: string };

function isSealedBody(value: JsonValue): value is SealedBody & JsonValue {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const identity = value["identity"];
  return (
    typeof value["runId"] === "string" &&
    Number.isSafeInteger(value["step"]) &&
    STATUSES.has(value["status"]) &&
    Number.isSafeInteger(value["segment"]) &&
    typeof value["flow"] === "string" &&
    KINDS.has(value["kind"]) &&
    isSegmentCounts(value["calls"]) &&
    value["calls"].length === (value["segment"] as number) + 1 &&
    typeof identity === "object" &&
    identity !== null &&
    !Array.isArray(identity) &&
    "data" in value
  );
}
