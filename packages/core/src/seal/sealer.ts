import { canonicalJson } from "../base/canonical.js";
import type { JsonValue } from "../base/json.js";
import { Encryption, type EncryptionKeys, isEncrypted } from "./encryption.js";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { type CheckpointKeys, type SignatureAlgorithm, SigningKeys } from "./signing.js";

export type { CheckpointKeys } from "./signing.js";
export type { EncryptionKeys } from "./encryption.js";

/** What a sealed value is; bound into the signature so one kind cannot pass for another. */
export type SealPurpose = "checkpoint" | "call" | "event" | "stream";

/**
 * The plain columns a store keeps beside a sealed value, as the reader found
 * them (a `StoredCheckpoint`, a `StoredCall`): an encrypted envelope binds
 * them as associated data. `runId` also names the run in errors.
 */
export interface SealedColumns {
  readonly runId: string;
  readonly step?: number;
  readonly status?: string;
  readonly segment?: number;
  readonly seq?: number;
  readonly name?: string;
  readonly kind?: string;
  /** An event's idempotency key. */
  readonly key?: string;
  /** A stream batch's first part and how many it holds. */
  readonly offset?: number;
  readonly count?: number;
}

/**
 * The columns each purpose binds: what a store keeps in the clear beside the
 * envelope, each with the key it is bound under (the run's name as `flow`,
 * the key every version has bound it with).
 */
const COLUMNS: Readonly<Record<SealPurpose, readonly (readonly [keyof SealedColumns, string])[]>> = {
  checkpoint: [
    ["runId", "runId"],
    ["step", "step"],
    ["status", "status"],
    ["segment", "segment"],
    ["name", "flow"],
    ["kind", "kind"],
  ],
  call: [
    ["runId", "runId"],
    ["segment", "segment"],
    ["seq", "seq"],
  ],
  event: [
    ["runId", "runId"],
    ["seq", "seq"],
    ["key", "key"],
  ],
  stream: [
    ["runId", "runId"],
    ["segment", "segment"],
    ["offset", "offset"],
    ["count", "count"],
  ],
};

const V1 = "d1";
const V2 = "d2";
const UNSIGNED = "-";
const SIGNATURES: ReadonlySet<string> = new Set<SignatureAlgorithm>(["hs256", "ed25519"]);

/**
 * Seals values into versioned envelopes and opens them again:
 *
 * - `d1.<mac>.<canonical JSON>`: HMAC-SHA256 (or `-`, unsigned) over the
 *   purpose and the canonical text; what a sealer with HMAC keys and no
 *   encryption writes, as every earlier version did.
 * - `d2.<alg>:<signature>.<content>` (or `d2.-.<content>`): the signature, by
 *   HMAC-SHA256 (`hs256`) or Ed25519 (`ed25519`), covers the purpose and the
 *   content; the content is the canonical JSON, or with an `encryptionKey`
 *   `a256gcm:<key id>:<IV, ciphertext, tag>` (encrypt, then sign, so a
 *   signature checks without decrypting).
 *
 * Every sealer opens both versions: turning encryption or Ed25519 on leaves
 * older rows readable.
 */
export class Sealer {
  readonly #keys: SigningKeys;
  readonly #encryption: Encryption | undefined;

  private constructor(keys: SigningKeys, encryption: Encryption | undefined) {
    this.#keys = keys;
    this.#encryption = encryption;
  }

  /**
   * A sealer that signs with the first key and verifies with any of them, and
   * with `encryptionKey` encrypts with its first key and decrypts with any.
   */
  static withKeys(keys: CheckpointKeys, encryptionKey?: EncryptionKeys): Sealer {
    return new Sealer(SigningKeys.of(keys), encryptionKey === undefined ? undefined : Encryption.of(encryptionKey));
  }

  /** A sealer that signs nothing: only for a store that never leaves this process. */
  static unsigned(encryptionKey?: EncryptionKeys): Sealer {
    return new Sealer(SigningKeys.none(), encryptionKey === undefined ? undefined : Encryption.of(encryptionKey));
  }

  /** True when this sealer signs or verifies; false for `Sealer.unsigned()`. */
  get signs(): boolean {
    return this.#keys.any;
  }

  /** False for a reader's sealer: it holds only Ed25519 public keys, so it verifies but cannot seal. */
  get canSeal(): boolean {
    return !this.#keys.any || this.#keys.algorithm !== undefined;
  }

  /** True when this sealer encrypts what it seals. */
  get encrypts(): boolean {
    return this.#encryption !== undefined;
  }

  /**
   * Seals plain JSON data. A value that is not plain JSON is an `InvalidInput`
   * naming `what` and the path inside it. An encrypted envelope binds
   * `columns`, the plain columns the store keeps beside it (by default the
   * body's own fields of those names: `runId`, `segment`, `seq`, …).
   */
  seal(purpose: SealPurpose, body: unknown, what: string = purpose, columns: SealedColumns = columnsOf(body)): string {
    const text = canonicalJson(body, what);
    const algorithm = this.#keys.algorithm;
    if (this.#keys.any && algorithm === undefined)
      throw new InvalidInput(
        "this sealer holds only Ed25519 public keys: it verifies, it cannot write. Workers need the private key.",
      );
    if (this.#encryption === undefined && algorithm !== "ed25519") {
      const mac = algorithm === undefined ? UNSIGNED : this.#keys.sign(`${V1}:${purpose}\n`, text);
      return `${V1}.${mac}.${text}`;
    }
    const content =
      this.#encryption === undefined ? text : this.#encryption.encrypt(text, associated(purpose, columns, undefined));
    const signature =
      algorithm === undefined ? UNSIGNED : `${algorithm}:${this.#keys.sign(`${V2}:${purpose}\n`, content)}`;
    return `${V2}.${signature}.${content}`;
  }

  /**
   * Verifies a sealed envelope and returns its body. `columns` are the plain
   * columns stored beside it (at least the run id). Any mismatch (another
   * key, a changed byte or column, another purpose, a signed envelope read
   * unsigned or the reverse, encrypted content without the key) is
   * `CheckpointStoreCorrupt`. With `chained`, the signature is not checked
   * (an encrypted body still decrypts, bound to its columns): only for an
   * envelope whose digest a verified one seals, which the caller checks.
   */
  open(purpose: SealPurpose, sealed: string, columns: SealedColumns, chained = false): JsonValue {
    const runId = columns.runId;
    const parts = envelopeParts(sealed);
    if (parts === undefined) {
      throw new CheckpointStoreCorrupt(runId, `a stored ${purpose} is not a sealed ${V1} or ${V2} envelope.`);
    }
    const { version, signature, content } = parts;
    // `chained`: the caller checks the envelope's digest against a later one it verified, which seals it (a chain of checkpoints).
    if (!chained && !this.#verifies(version, purpose, signature, content)) {
      throw new CheckpointStoreCorrupt(
        runId,
        `the signature of a stored ${purpose} does not match: it was changed, or sealed with a key this worker does not have.`,
      );
    }
    const text = version === V2 && isEncrypted(content) ? this.#decrypt(purpose, content, columns) : content;
    try {
      return JSON.parse(text) as JsonValue;
    } catch (cause) {
      throw new CheckpointStoreCorrupt(runId, `a stored ${purpose} is not JSON.`, { cause });
    }
  }

  /**
   * For a reader without `encryptionKey` (a console): true when `sealed` is an
   * encrypted envelope whose signature verifies with these keys, so it is
   * intact and only its content is out of reach; false otherwise.
   */
  verifiesEncrypted(purpose: SealPurpose, sealed: string): boolean {
    const parts = envelopeParts(sealed);
    if (parts === undefined || parts.version !== V2 || !isEncrypted(parts.content)) return false;
    return this.#verifies(parts.version, purpose, parts.signature, parts.content);
  }

  #verifies(version: string, purpose: SealPurpose, signature: string, content: string): boolean {
    if (!this.#keys.any) return signature === UNSIGNED;
    if (version === V1) return this.#keys.verify("hs256", `${V1}:${purpose}\n`, signature, content);
    const colon = signature.indexOf(":");
    const algorithm = signature.slice(0, colon);
    if (colon < 0 || !SIGNATURES.has(algorithm)) return false;
    const prefix = `${V2}:${purpose}\n`;
    return this.#keys.verify(algorithm as SignatureAlgorithm, prefix, signature.slice(colon + 1), content);
  }

  #decrypt(purpose: SealPurpose, content: string, columns: SealedColumns): string {
    if (this.#encryption === undefined)
      throw new CheckpointStoreCorrupt(
        columns.runId,
        `a stored ${purpose} is encrypted, and this process has no encryptionKey: give it the workers' encryption keys.`,
      );
    return this.#encryption.decrypt(content, associated(purpose, columns, columns.runId), columns.runId, purpose);
  }
}

/** A body's own fields that name plain columns (a call record's `runId`, `segment` and `seq`). */
function columnsOf(body: unknown): SealedColumns {
  return typeof body === "object" && body !== null ? (body as SealedColumns) : { runId: "" };
}

/** An envelope's version, signature and content, or undefined when it is not a v1 or v2 envelope. */
function envelopeParts(sealed: string): { version: string; signature: string; content: string } | undefined {
  const first = sealed.indexOf(".");
  const second = first < 0 ? -1 : sealed.indexOf(".", first + 1);
  const version = sealed.slice(0, first);
  if (second < 0 || (version !== V1 && version !== V2)) return undefined;
  return { version, signature: sealed.slice(first + 1, second), content: sealed.slice(second + 1) };
}

/** The associated data of an encrypted envelope: its purpose and the plain columns a store keeps beside it. */
function associated(purpose: SealPurpose, columns: SealedColumns, runId: string | undefined): string {
  const bound: Record<string, unknown> = {};
  for (const [column, key] of COLUMNS[purpose]) if (columns[column] !== undefined) bound[key] = columns[column];
  try {
    return `${V2}:${purpose}\n${canonicalJson(bound, "columns")}`;
  } catch (cause) {
    throw new CheckpointStoreCorrupt(runId, `a stored ${purpose}'s plain columns are not plain values.`, { cause });
  }
}
