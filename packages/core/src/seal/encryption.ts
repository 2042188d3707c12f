import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { CheckpointStoreCorrupt, InvalidInput } from "../base/errors.js";
import { describeType } from "../base/option-checks.js";
import { keyBytes } from "./signing.js";

/** An encryption key: at least 32 random bytes, as a string (UTF-8) or bytes. */
type EncryptionKey = string | Uint8Array;

/** One key, or a list for rotation: the first encrypts, every one decrypts. */
export type EncryptionKeys = EncryptionKey | readonly EncryptionKey[];

/** What encrypted content starts with: the algorithm, then the key's id. */
const ALGORITHM = "a256gcm";
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface DerivedKey {
  /** The AES-256 key, derived from the key given (HKDF-SHA256), so any 32+ bytes serve. */
  readonly key: Buffer;
  /** Names the key in each envelope without revealing it, so rotation finds the one that decrypts. */
  readonly id: string;
}

/**
 * AES-256-GCM under the runner's `encryptionKey`: each value gets a fresh
 * random 96-bit IV, and the associated data (the plain columns a store keeps
 * beside it) is bound to the ciphertext, so a changed column fails to decrypt.
 * Random IVs are safe for about 2³² values per key: rotate before that.
 */
export class Encryption {
  readonly #keys: readonly DerivedKey[];

  private constructor(keys: readonly DerivedKey[]) {
    this.#keys = keys;
  }

  /** Checks `encryptionKey` (a key or a list) and derives the AES keys. */
  static of(keys: EncryptionKeys): Encryption {
    const list: readonly unknown[] = Array.isArray(keys) ? keys : [keys];
    if (!Array.isArray(keys) && !(typeof keys === "string" || keys instanceof Uint8Array))
      throw new InvalidInput(
        `encryptionKey must be a key (a string or bytes) or a list of keys, not ${describeType(keys)}.`,
      );
    if (list.length === 0) throw new InvalidInput("encryptionKey: give at least one key.");
    return new Encryption(
      list.map((key, index) =>
        derive(keyBytes(key, Array.isArray(keys) ? `encryptionKey[${index}]` : "encryptionKey")),
      ),
    );
  }

  /** `a256gcm:<key id>:<base64url of IV, ciphertext and tag>`. */
  encrypt(text: string, associated: string): string {
    const first = this.#keys[0] as DerivedKey;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", first.key, iv);
    cipher.setAAD(Buffer.from(associated, "utf8"));
    const sealed = Buffer.concat([iv, cipher.update(text, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${ALGORITHM}:${first.id}:${sealed.toString("base64url")}`;
  }

  /**
   * Decrypts what `encrypt` made. Another key, a changed byte or other
   * associated data (a plain column changed) is `CheckpointStoreCorrupt`.
   */
  decrypt(content: string, associated: string, runId: string, what: string): string {
    const [algorithm, id, data] = content.split(":");
    const key = this.#keys.find((k) => k.id === id);
    if (algorithm !== ALGORITHM || data === undefined)
      throw new CheckpointStoreCorrupt(runId, `a stored ${what} is not ${ALGORITHM} content.`);
    if (key === undefined)
      throw new CheckpointStoreCorrupt(
        runId,
        `a stored ${what} is encrypted with a key this worker does not have (key id ${id}): give every worker the encryption keys still in use.`,
      );
    const bytes = Buffer.from(data, "base64url");
    if (bytes.length < IV_BYTES + TAG_BYTES)
      throw new CheckpointStoreCorrupt(runId, `a stored ${what} is too short to be encrypted content.`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", key.key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(associated, "utf8"));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
    } catch (cause) {
      throw new CheckpointStoreCorrupt(
        runId,
        `a stored ${what} does not decrypt: its ciphertext or a plain column stored beside it was changed.`,
        { cause },
      );
    }
  }
}

/** Content made by `Encryption.encrypt`, as against plain JSON. */
export function isEncrypted(content: string): boolean {
  return content.startsWith(`${ALGORITHM}:`);
}

function derive(bytes: Buffer): DerivedKey {
  const key = Buffer.from(hkdfSync("sha256", bytes, Buffer.alloc(0), "durable.a256gcm.v1", 32));
  const id = Buffer.from(hkdfSync("sha256", bytes, Buffer.alloc(0), "durable.key-id.v1", 6)).toString("base64url");
  return { key, id };
}
