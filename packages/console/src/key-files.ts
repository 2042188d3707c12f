import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import type { CheckpointKeys, EncryptionKeys } from "@durable/core";
import { ConsoleError, firstLine } from "./console-error.js";

/**
 * The workers' key from `--key-file` or `DURABLE_KEY`, never echoed: one HMAC
 * key a line (for rotation: the first signs, all verify), or an Ed25519 key in
 * PEM (`-----BEGIN PUBLIC KEY-----`: the console then reads and cannot act;
 * `PRIVATE KEY`: it can), in the order given.
 */
export function checkpointKeysFrom(file: string | undefined): CheckpointKeys {
  const text = keyText(file, "--key-file", "DURABLE_KEY");
  const keys: (string | KeyObject)[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const begin = /^-----BEGIN ([A-Z ]+)-----$/.exec(line.trim());
    if (begin === null) {
      if (line.length > 0) keys.push(hmacKey(line));
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && l.trim() === `-----END ${begin[1]}-----`);
    if (end < 0) throw new ConsoleError(`The key's PEM block "${begin[1]}" has no END line.`);
    keys.push(pemKey(lines.slice(i, end + 1).join("\n"), begin[1] as string));
    i = end;
  }
  if (keys.length === 0)
    throw new ConsoleError("The console needs the workers' key: give --key-file <file> or DURABLE_KEY.");
  return keys.length === 1 ? (keys[0] as string | KeyObject) : keys;
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
