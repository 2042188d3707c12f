import { createHmac, timingSafeEqual } from "node:crypto";
import { canonicalJson, type JsonValue } from "./canonical.js";
import { CheckpointStoreCorrupt, InvalidInput } from "./errors.js";
import { describeType } from "./options.js";

/** A signing key: at least 32 bytes, as a string (UTF-8) or bytes. */
export type CheckpointKey = string | Uint8Array;

/** One key, or a list for rotation: the first signs, every one verifies. */
export type CheckpointKeys = CheckpointKey | readonly CheckpointKey[];

/** What a sealed value is; bound into the signature so one kind cannot pass for another. */
export type SealPurpose = "checkpoint" | "call";

const VERSION = "d1";
const UNSIGNED = "-";
const MIN_KEY_BYTES = 32;

/**
 * Seals values into a versioned envelope, `d1.<mac>.<canonical JSON>`, where the
 * mac is HMAC-SHA256 over the purpose and the canonical bytes, and opens them
 * again with a constant-time check against every key.
 */
export class Sealer {
  readonly #keys: readonly Buffer[];

  private constructor(keys: readonly Buffer[]) {
    this.#keys = keys;
  }

  /** A sealer that signs with the first key and verifies with any of them. */
  static withKeys(keys: CheckpointKeys): Sealer {
    if (isKey(keys)) return new Sealer([toKeyBytes(keys, "checkpointKey")]);
    if (!Array.isArray(keys)) {
      throw new InvalidInput(
        `checkpointKey must be a key (a string or bytes) or a list of keys, not ${describeType(keys)}.`,
      );
    }
    if (keys.length === 0) throw new InvalidInput("checkpointKey: give at least one key.");
    return new Sealer(keys.map((key: unknown, index) => toKeyBytes(key, `checkpointKey[${index}]`)));
  }

  /** A sealer that signs nothing: only for a store that never leaves this process. */
  static unsigned(): Sealer {
    return new Sealer([]);
  }

  /** True when this sealer signs; false for `Sealer.unsigned()`. */
  get signs(): boolean {
    return this.#keys.length > 0;
  }

  /**
   * Seals plain JSON data. A value that is not plain JSON is an `InvalidInput`
   * naming `what` and the path inside it.
   */
  seal(purpose: SealPurpose, body: unknown, what: string = purpose): string {
    const text = canonicalJson(body, what);
    const signer = this.#keys[0];
    const mac = signer === undefined ? UNSIGNED : mac64(signer, purpose, text);
    return `${VERSION}.${mac}.${text}`;
  }

  /**
   * Verifies a sealed envelope and returns its body. Any mismatch (another key,
   * a changed byte, another purpose, a signed envelope read unsigned or the
   * reverse) is `CheckpointStoreCorrupt`.
   */
  open(purpose: SealPurpose, sealed: string, runId: string | undefined): JsonValue {
    const first = sealed.indexOf(".");
    const second = first < 0 ? -1 : sealed.indexOf(".", first + 1);
    if (second < 0 || sealed.slice(0, first) !== VERSION) {
      throw new CheckpointStoreCorrupt(runId, `a stored ${purpose} is not a sealed ${VERSION} envelope.`);
    }
    const mac = sealed.slice(first + 1, second);
    const text = sealed.slice(second + 1);
    if (!this.#verifies(purpose, mac, text)) {
      throw new CheckpointStoreCorrupt(
        runId,
        `the signature of a stored ${purpose} does not match: it was changed, or sealed with a key this worker does not have.`,
      );
    }
    try {
      return JSON.parse(text) as JsonValue;
    } catch (cause) {
      throw new CheckpointStoreCorrupt(runId, `a stored ${purpose} is not JSON.`, { cause });
    }
  }

  #verifies(purpose: SealPurpose, mac: string, text: string): boolean {
    if (this.#keys.length === 0) return mac === UNSIGNED;
    // Compare the encoded text, not decoded bytes: base64url decoding ignores
    // trailing bits, so two mac strings could otherwise stand for one digest.
    const given = Buffer.from(mac, "latin1");
    let ok = false;
    for (const key of this.#keys) {
      const expected = Buffer.from(mac64(key, purpose, text), "latin1");
      if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
    }
    return ok;
  }
}

function mac64(key: Buffer, purpose: SealPurpose, text: string): string {
  return createHmac("sha256", key).update(`${VERSION}:${purpose}\n`).update(text).digest("base64url");
}

function isKey(key: unknown): key is CheckpointKey {
  return typeof key === "string" || key instanceof Uint8Array;
}

/** The bytes of one key; `name` is how messages call it (`checkpointKey`, `checkpointKey[1]`). */
function toKeyBytes(key: unknown, name: string): Buffer {
  if (!isKey(key)) throw new InvalidInput(`${name} must be a string or bytes, not ${describeType(key)}.`);
  const bytes = typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key);
  if (bytes.length < MIN_KEY_BYTES) {
    throw new InvalidInput(
      `${name} is ${bytes.length} bytes; a key needs at least ${MIN_KEY_BYTES} ` +
        "random bytes (for example `openssl rand -base64 32`).",
    );
  }
  return bytes;
}
