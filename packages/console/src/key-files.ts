import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import type { CheckpointKeys, EncryptionKeys } from "@durable/core";
import { ConsoleError, firstLine } from "./console-error.js";

/**
 * The workers' key from `--key-file` or `DURABLE_KEY`, never echoed: one HMAC
 * key a line (for rotation: the first signs, all verify), or Ed25519 keys in
 * PEM (a `PUBLIC KEY` block: the console then reads and cannot act; a
 * `PRIVATE KEY` block: it can), then, while runs sealed before a switch to
 * Ed25519 matter, their HMAC keys, which only verify. A line before the first
 * PEM key is refused: taken as an HMAC key, it would sign in place of it.
 */
export function checkpointKeysFrom(file: string | undefined): CheckpointKeys {
  const text = keyText(file, "--key-file", "DURABLE_KEY");
  const keys = text.includes("-----BEGIN") ? pemFirst(text) : lines(text).map(hmacKey);
  if (keys.length === 0)
    throw new ConsoleError("The console needs the workers' key: give --key-file <file> or DURABLE_KEY.");
  return keys.length === 1 ? (keys[0] as string | KeyObject) : keys;
}

/** The keys of a text with PEM blocks (`PUBLIC KEY`, `PRIVATE KEY`), in order, HMAC lines allowed after the first. */
function pemFirst(text: string): (string | KeyObject)[] {
  const keys: (string | KeyObject)[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === "") continue;
    const label = /^-----BEGIN (PUBLIC KEY|PRIVATE KEY)-----$/.exec(line.trim())?.[1];
    if (label === undefined) {
      if (keys.length === 0 || line.trim().startsWith("-----"))
        throw new ConsoleError(
          `The key file's line ${i + 1} is not a PUBLIC KEY or PRIVATE KEY block where one must be: a file with a PEM key starts with it, and HMAC keys of older runs go after it (an ENCRYPTED PRIVATE KEY must be exported without its passphrase).`,
        );
      keys.push(hmacKey(line));
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && l.trim() === `-----END ${label}-----`);
    if (end < 0) throw new ConsoleError(`The key's PEM block "${label}" has no END line.`);
    keys.push(pemKey(lines.slice(i, end + 1).join("\n"), label));
    i = end;
  }
  return keys;
}

/** The workers' encryption key from `--encryption-key-file` or `DURABLE_ENCRYPTION_KEY` (a line each: the first encrypts), if given. */
export function encryptionKeysFrom(file: string | undefined): EncryptionKeys | undefined {
  if (file === undefined && process.env["DURABLE_ENCRYPTION_KEY"] === undefined) return undefined;
  const keys = lines(keyText(file, "--encryption-key-file", "DURABLE_ENCRYPTION_KEY"));
  if (keys.length === 0) throw new ConsoleError("The encryption key is empty: give the key your workers encrypt with.");
  return keys.length === 1 ? (keys[0] as string) : keys;
}

/** A key file's keys, one a line: its lines that are not empty. */
function lines(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line.length > 0);
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
