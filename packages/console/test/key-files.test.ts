import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sealer } from "@durable/core/runner";
import { afterAll, describe, expect, it } from "vitest";
import { ConsoleError } from "../src/console-error.js";
import { checkpointKeysFrom } from "../src/key-files.js";
import { KEY } from "./fixture.js";

const dir = mkdtempSync(join(tmpdir(), "durable-console-key-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const pem = (key: KeyObject) =>
  key.export({ type: key.type === "private" ? "pkcs8" : "spki", format: "pem" }) as string;
let files = 0;
const keysOf = (text: string) => {
  const file = join(dir, `key-${files++}`);
  writeFileSync(file, text);
  return checkpointKeysFrom(file);
};
const BODY = { runId: "r", step: 0 };

describe("the console's key file", () => {
  it("holds the public key and, after it, the HMAC key of runs sealed before the switch: both verify, none signs", () => {
    const sealer = Sealer.withKeys(keysOf(`${pem(publicKey)}${KEY}\n`));
    expect(sealer.canSeal).toBe(false);
    expect(sealer.open("checkpoint", Sealer.withKeys(privateKey).seal("checkpoint", BODY), BODY)).toEqual(BODY);
    expect(sealer.open("checkpoint", Sealer.withKeys(KEY).seal("checkpoint", BODY), BODY)).toEqual(BODY);
  });

  it("takes a private key, with CRLF line ends, which signs", () => {
    const sealer = Sealer.withKeys(keysOf(pem(privateKey).replaceAll("\n", "\r\n")));
    expect(sealer.canSeal).toBe(true);
  });

  it("refuses a line before the first PEM key, which would sign in its place, and other PEM blocks", () => {
    expect(() => keysOf(`${KEY}\n${pem(publicKey)}`)).toThrow(ConsoleError);
    expect(() => keysOf(`${KEY}\n${pem(publicKey)}`)).toThrow(/line 1 is not a PUBLIC KEY or PRIVATE KEY block/);
    const encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
    expect(() => keysOf(`${pem(publicKey)}${encrypted}`)).toThrow(/exported without its passphrase/);
    expect(() => keysOf("-----BEGIN PUBLIC KEY-----\nAAAA\n")).toThrow(/has no END line/);
  });
});
