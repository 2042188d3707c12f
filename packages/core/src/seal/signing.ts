import { createHmac, createPublicKey, KeyObject, sign, timingSafeEqual, verify } from "node:crypto";
import { InvalidInput } from "../base/errors.js";
import { describeType } from "../base/option-checks.js";

/**
 * A signing key. A string or bytes (at least 32) is an HMAC-SHA256 key: every
 * holder can sign and verify. A Node `KeyObject` is an Ed25519 key: a private
 * key signs and verifies (workers), a public key only verifies (readers: the
 * console, an audit), so a reader cannot write a row the workers accept.
 */
type CheckpointKey = string | Uint8Array | KeyObject;

/** One key, or a list for rotation: the first signs, every one verifies. */
export type CheckpointKeys = CheckpointKey | readonly CheckpointKey[];

/** How an envelope is signed: HMAC-SHA256, Ed25519, or not at all (`-`, an in-process store only). */
export type SignatureAlgorithm = "hs256" | "ed25519";

const MIN_KEY_BYTES = 32;

/** The keys of one sealer, split by algorithm: the first key given signs, every one verifies. */
export class SigningKeys {
  readonly #hmac: readonly Buffer[];
  readonly #ed25519: readonly KeyObject[];
  readonly #signer: { readonly algorithm: SignatureAlgorithm; readonly key: Buffer | KeyObject } | undefined;

  private constructor(keys: readonly (Buffer | KeyObject)[]) {
    this.#hmac = keys.filter((key): key is Buffer => Buffer.isBuffer(key));
    // A private key verifies through its public half; a public key only verifies.
    this.#ed25519 = keys.flatMap((key) =>
      key instanceof KeyObject ? [key.type === "private" ? createPublicKey(key) : key] : [],
    );
    const first = keys[0];
    if (first === undefined || (first instanceof KeyObject && first.type !== "private")) this.#signer = undefined;
    else this.#signer = { algorithm: Buffer.isBuffer(first) ? "hs256" : "ed25519", key: first };
  }

  /** Checks and splits `checkpointKey` (a key or a list). */
  static of(keys: CheckpointKeys): SigningKeys {
    if (isKey(keys)) return new SigningKeys([toKey(keys, "checkpointKey")]);
    if (!Array.isArray(keys)) {
      throw new InvalidInput(
        `checkpointKey must be a key (a string, bytes or an Ed25519 KeyObject) or a list of keys, not ${describeType(keys)}.`,
      );
    }
    if (keys.length === 0) throw new InvalidInput("checkpointKey: give at least one key.");
    return new SigningKeys(keys.map((key: unknown, index) => toKey(key, `checkpointKey[${index}]`)));
  }

  /** No key at all: envelopes are unsigned (`-`). */
  static none(): SigningKeys {
    return new SigningKeys([]);
  }

  /** True when there is any key (signed envelopes), false for unsigned ones. */
  get any(): boolean {
    return this.#hmac.length + this.#ed25519.length > 0;
  }

  /** The algorithm the first key signs with; undefined when it cannot sign (no key, or a public key). */
  get algorithm(): SignatureAlgorithm | undefined {
    return this.#signer?.algorithm;
  }

  /** The signature of `text` (base64url) with the first key; only when `algorithm` is defined. */
  sign(prefix: string, text: string): string {
    const signer = this.#signer;
    if (signer === undefined) throw new InvalidInput("checkpointKey holds no key that can sign.");
    if (Buffer.isBuffer(signer.key)) return hmac64(signer.key, prefix, text);
    return sign(null, Buffer.from(prefix + text, "utf8"), signer.key).toString("base64url");
  }

  /** True when `signature` is a signature of `text` by any key of `algorithm`; constant-time for HMAC. */
  verify(algorithm: SignatureAlgorithm, prefix: string, signature: string, text: string): boolean {
    if (algorithm === "ed25519") {
      const bytes = Buffer.from(signature, "base64url");
      // Compare the encoded text, not only decoded bytes: base64url decoding ignores trailing bits.
      if (bytes.toString("base64url") !== signature || this.#ed25519.length === 0) return false;
      const data = Buffer.from(prefix + text, "utf8");
      return this.#ed25519.some((key) => verify(null, data, key, bytes));
    }
    // Compare the encoded text, not decoded bytes: base64url decoding ignores
    // trailing bits, so two mac strings could otherwise stand for one digest.
    const given = Buffer.from(signature, "latin1");
    let ok = false;
    for (const key of this.#hmac) {
      const expected = Buffer.from(hmac64(key, prefix, text), "latin1");
      if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
    }
    return ok;
  }
}

function hmac64(key: Buffer, prefix: string, text: string): string {
  return createHmac("sha256", key).update(prefix).update(text).digest("base64url");
}

function isKey(key: unknown): key is CheckpointKey {
  return typeof key === "string" || key instanceof Uint8Array || key instanceof KeyObject;
}

/** One key checked; `name` is how messages call it (`checkpointKey`, `checkpointKey[1]`). */
function toKey(key: unknown, name: string): Buffer | KeyObject {
  if (key instanceof KeyObject) {
    if (key.asymmetricKeyType !== "ed25519")
      throw new InvalidInput(
        `${name} is a ${key.type} ${key.asymmetricKeyType ?? ""} key; an asymmetric key must be Ed25519 ` +
          "(generateKeyPairSync('ed25519'), createPrivateKey(pem), createPublicKey(pem)).",
      );
    return key;
  }
  return keyBytes(key, name);
}

/** The bytes of a secret key: at least 32, as a string (UTF-8) or bytes. */
export function keyBytes(key: unknown, name: string): Buffer {
  if (!(typeof key === "string" || key instanceof Uint8Array))
    throw new InvalidInput(`${name} must be a string or bytes, not ${describeType(key)}.`);
  const bytes = typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key);
  if (bytes.length < MIN_KEY_BYTES) {
    throw new InvalidInput(
      `${name} is ${bytes.length} bytes; a key needs at least ${MIN_KEY_BYTES} ` +
        "random bytes (for example `openssl rand -base64 32`).",
    );
  }
  return bytes;
}
