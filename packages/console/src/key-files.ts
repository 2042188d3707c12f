import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import type { CheckpointKeys, EncryptionKeys } from "@durable/core";
import { ConsoleError, firstLine } from "./console-error.js";

/**
 * The workers' key from `--key-file` or `DURABLE_KEY`, never echoed: one HMAC
 * key a line (for rotation: the first signs, all verify), or Ed25519 keys in
 * PEM, only (a `PUBLIC KEY` block: the console then reads and cannot act; a
 * `PRIVATE KEY` block: it can). A file of both is refused: a stray line taken
 * as an HMAC key would sign in place of the public key.
 */
export function checkpointKeysFrom(file: string | undefined): CheckpointKeys {
  const text = keyText(file, "--key-file", "DURABLE_KEY");
  const keys = text.includes("-----BEGIN")
    ? pemKeys(text)
    : text
        .split(/\r?\n/)
        .filter((l) => l.length > 0)
        .map(hmacKey);
  if (keys.length === 0)
    throw new ConsoleError("The console needs the workers' key: give --key-file <file> or DURABLE_KEY.");
  return keys.length === 1 ? (keys[0] as string | KeyObject) : keys;
}

/** The `PUBLIC KEY` and `PRIVATE KEY` blocks of a PEM text, in order; any other line is refused. */
function pemKeys(text: string): KeyObject[] {
  const keys: KeyObject[] = [];
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === "") continue;
    const label = /^-----BEGIN (PUBLIC KEY|PRIVATE KEY)-----$/.exec(lines[i] as string)?.[1];
    if (label === undefined)
      throw new ConsoleError(
        `The key file's line ${i + 1} is not the start of a PUBLIC KEY or PRIVATE KEY block: a file with a PEM key holds PEM keys only (an ENCRYPTED PRIVATE KEY must be exported without its passphrase).`,
      );
    const end = lines.indexOf(`-----END ${label}-----`, i + 1);
    if (end < 0) throw new ConsoleError(`The key's PEM block "${label}" has no END line.`);
    keys.push(pemKey(lines.slice(i, end + 1).join("\n"), label));
    i = end;
  }
  return keys;
}

/** The workers' encryption key from `--encryption-key-file` or `DURABLE_ENCRYPTION_KEY` (a line each: the first encrypts), if given. */
export function encryptionKeysFrom(file: string | undefined): EncryptionKeys | undefined {
  if (file === undefined && process.env["DURABLE_ENCRYPTION_KEY"] === undefined) return undefined;
  const keys = keyText(file, "--encryption-key-file", "DURABLE_ENCRYPTION_KEY")
    .split(/\r?\n/)
    .filter((line) => line.length > 0);
  if (keys.length === 0) throw new ConsoleError("The encryption key is empty: give the key your workers encrypt with.");
  return keys.length === 1 ? (keys[0] as string) : keys;
}

function keyText(file: string | undefined, option: string, variable: string): string {
  if (file === undefined) return process.env[variable] ?? "";
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new ConsoleError(`${option} ${file} cannot be read (${firstLine(error)}).`);
  }
}

function hmacKey(line: string): string {
  if (Buffer.byteLength(line, "utf8") < 32)
    throw new ConsoleError("The key must be at least 32 bytes: give the key your workers seal with.");
  return line;
}

function pemKey(pem: string, label: string): KeyObject {
  try {
    return label.includes("PRIVATE") ? createPrivateKey(pem) : createPublicKey(pem);
  } catch (error) {
    throw new ConsoleError(`The key's PEM block "${label}" cannot be read (${firstLine(error)}).`);
  }
}
