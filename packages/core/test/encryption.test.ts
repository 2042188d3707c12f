import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CheckpointStoreCorrupt, InvalidInput, MemoryCheckpointStore } from "../src/index.js";
import { DurableRun, openCheckpoint, readCallLog, Sealer, sealerFor } from "../src/runner.js";
import type { StoredCheckpoint } from "../src/store.js";
import { KEY, OLD_KEY, TamperedStore } from "./helpers.js";

const ENCRYPTION_KEY = "e".repeat(32);
const OLD_ENCRYPTION_KEY = "f".repeat(32);
const encrypting = Sealer.withKeys(KEY, ENCRYPTION_KEY);
const CALL = {
  runId: "r",
  segment: 0,
  seq: 3,
  round: 1,
  callId: "c",
  tool: "charge",
  kind: "done",
  args: { card: "4242" },
};
const COLUMNS = { runId: "r", segment: 0, seq: 3 };

/** A flow run started on `store` by `sealer`, with one call's records. */
async function encryptedRun(store: MemoryCheckpointStore, sealer: Sealer = encrypting): Promise<void> {
  const { run } = await DurableRun.start({
    store,
    sealer,
    runId: "run-1",
    name: "tickets",
    kind: "flow",
    identity: { user: "ada" },
    data: { state: { card: "4242-4242" } },
  });
  await run.log.append({ round: 1, callId: "c", tool: "charge", kind: "started", args: { card: "4242-4242" } });
  await run.log.append({
    round: 1,
    callId: "c",
    tool: "charge",
    kind: "done",
    args: { card: "4242-4242" },
    result: "ok",
  });
  await run.flush();
}

describe("encryption at rest", () => {
  it("stores no payload in the clear: state, arguments and results are AES-256-GCM ciphertext", async () => {
    const store = new MemoryCheckpointStore();
    await encryptedRun(store);
    const rows = [(await store.latest("run-1")).sealed, ...(await store.calls("run-1")).map((c) => c.sealed)];
    for (const sealed of rows) {
      expect(sealed).toMatch(/^d2\.hs256:[\w-]+\.a256gcm:[\w-]{8}:[\w-]+$/);
      expect(sealed).not.toContain("4242");
    }
    const latest = await DurableRun.latest(store, encrypting, "run-1");
    expect(latest.data).toEqual({ state: { card: "4242-4242" } });
    expect((await readCallLog(store, encrypting, "run-1", latest.calls)).map((r) => r.kind)).toEqual([
      "started",
      "done",
    ]);
  });

  it("binds the plain columns: each one changed beside an encrypted checkpoint or record does not decrypt", async () => {
    const sealed = encrypting.seal("call", CALL);
    for (const columns of [
      { ...COLUMNS, runId: "s" },
      { ...COLUMNS, segment: 1 },
      { ...COLUMNS, seq: 2 },
    ])
      expect(() => encrypting.open("call", sealed, columns)).toThrow(/does not decrypt/);
    const store = new TamperedStore();
    await encryptedRun(store);
    const edits: Partial<StoredCheckpoint>[] = [
      { step: 1 },
      { status: "done" },
      { segment: 4 },
      { name: "other" },
      { kind: "loop" },
    ];
    for (const edit of edits) {
      store.editCheckpoint = (row) => ({ ...row, ...edit });
      await expect(DurableRun.latest(store, encrypting, "run-1")).rejects.toThrow(/does not decrypt/);
    }
  });

  it("refuses changed ciphertext, an unknown key id, another algorithm and encrypted rows read without the key", () => {
    const sealed = encrypting.seal("call", CALL);
    const [version, signature, content] = sealed.split(".") as [string, string, string];
    const unsigned = Sealer.unsigned(ENCRYPTION_KEY);
    const clear = unsigned.seal("call", CALL);
    // Without a signature, only the AEAD stands: every byte of the content counts.
    for (let i = 0; i < clear.length; i += 7) {
      const changed = `${clear.slice(0, i)}${clear[i] === "A" ? "B" : "A"}${clear.slice(i + 1)}`;
      if (changed !== clear)
        expect(() => unsigned.open("call", changed, COLUMNS), `byte ${i}`).toThrow(CheckpointStoreCorrupt);
    }
    expect(() =>
      encrypting.open("call", `${version}.${signature}.${content.replace("a256gcm", "a128gcm")}`, COLUMNS),
    ).toThrow(CheckpointStoreCorrupt);
    expect(() => Sealer.withKeys(KEY, OLD_ENCRYPTION_KEY).open("call", sealed, COLUMNS)).toThrow(/key id/);
    expect(() => Sealer.withKeys(KEY).open("call", sealed, COLUMNS)).toThrow(/has no encryptionKey/);
  });

  it("lets a reader without the encryption key tell an intact encrypted row from a changed one", () => {
    const sealed = encrypting.seal("call", CALL);
    const reader = Sealer.withKeys(KEY);
    expect(reader.verifiesEncrypted("call", sealed)).toBe(true);
    const changed = `${sealed.slice(0, -3)}${sealed.at(-3) === "A" ? "B" : "A"}${sealed.slice(-2)}`;
    expect(reader.verifiesEncrypted("call", changed)).toBe(false);
    expect(reader.verifiesEncrypted("checkpoint", sealed)).toBe(false);
    expect(Sealer.withKeys(OLD_KEY).verifiesEncrypted("call", sealed)).toBe(false);
    // A plain row is no encrypted row, whether it verifies or not.
    expect(reader.verifiesEncrypted("call", reader.seal("call", CALL))).toBe(false);
  });

  it("rotates keys: the first encrypts, every one decrypts; plain rows of before still open", () => {
    const old = Sealer.withKeys(KEY, OLD_ENCRYPTION_KEY).seal("call", CALL);
    const plain = Sealer.withKeys(KEY).seal("call", CALL);
    const rotated = Sealer.withKeys(KEY, [ENCRYPTION_KEY, OLD_ENCRYPTION_KEY]);
    expect(rotated.open("call", old, COLUMNS)).toEqual(CALL);
    expect(rotated.open("call", plain, COLUMNS)).toEqual(CALL);
    expect(encrypting.open("call", rotated.seal("call", CALL), COLUMNS)).toEqual(CALL);
  });

  it("refuses encryption keys that are too short, of the wrong type, or an empty list", () => {
    expect(() => Sealer.withKeys(KEY, "short")).toThrow(/encryptionKey is 5 bytes/);
    expect(() => Sealer.withKeys(KEY, [ENCRYPTION_KEY, new Uint8Array(8)])).toThrow(/encryptionKey\[1\]/);
    expect(() => Sealer.withKeys(KEY, [])).toThrow(InvalidInput);
    expect(() => Sealer.withKeys(KEY, 42 as never)).toThrow(/not a number/);
  });
});

describe("Ed25519 signatures", () => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const worker = Sealer.withKeys(privateKey);
  const reader = Sealer.withKeys(publicKey);

  it("a reader with the public key verifies what workers sealed, plain or encrypted", () => {
    expect(reader.open("call", worker.seal("call", CALL), COLUMNS)).toEqual(CALL);
    const sealed = Sealer.withKeys(privateKey, ENCRYPTION_KEY).seal("call", CALL);
    expect(sealed).toMatch(/^d2\.ed25519:/);
    expect(Sealer.withKeys(publicKey, ENCRYPTION_KEY).open("call", sealed, COLUMNS)).toEqual(CALL);
  });

  it("a reader cannot produce a row the workers accept: it cannot seal, and its forgeries do not verify", async () => {
    expect(reader.canSeal).toBe(false);
    expect(() => reader.seal("call", CALL)).toThrow(/verifies, it cannot write/);
    const store = new MemoryCheckpointStore();
    expect(() => sealerFor(store, publicKey)).toThrow(/public key, which verifies but cannot sign/);
    // What a reader could try: the public key's bytes as an HMAC key, an unsigned row, another Ed25519 key.
    const raw = publicKey.export({ format: "der", type: "spki" });
    const forgeries = [
      Sealer.withKeys(raw).seal("call", CALL),
      Sealer.withKeys(raw, ENCRYPTION_KEY).seal("call", CALL),
      Sealer.unsigned().seal("call", CALL),
      Sealer.unsigned(ENCRYPTION_KEY).seal("call", CALL),
      Sealer.withKeys(generateKeyPairSync("ed25519").privateKey).seal("call", CALL),
      worker.seal("call", CALL).replace("d2.ed25519:", "d2.hs256:"),
    ];
    for (const forged of forgeries) expect(() => worker.open("call", forged, COLUMNS)).toThrow(CheckpointStoreCorrupt);
  });

  it("a run written with the private key is read and verified with the public key alone", async () => {
    const store = new MemoryCheckpointStore();
    await encryptedRun(store, Sealer.withKeys(privateKey, ENCRYPTION_KEY));
    const readerWithKey = Sealer.withKeys(publicKey, ENCRYPTION_KEY);
    const latest = openCheckpoint(readerWithKey, await store.latest("run-1"));
    expect((await readCallLog(store, readerWithKey, "run-1", latest.calls)).length).toBe(2);
  });

  it("rotates from HMAC to Ed25519: the new key signs, the old one still verifies", () => {
    const fromHmac = Sealer.withKeys(OLD_KEY).seal("call", CALL);
    const rotated = Sealer.withKeys([privateKey, OLD_KEY]);
    expect(rotated.open("call", fromHmac, COLUMNS)).toEqual(CALL);
    expect(rotated.seal("call", CALL)).toMatch(/^d2\.ed25519:/);
    expect(() => Sealer.withKeys(OLD_KEY).open("call", rotated.seal("call", CALL), COLUMNS)).toThrow(
      CheckpointStoreCorrupt,
    );
  });

  it("refuses an asymmetric key that is not Ed25519", () => {
    const { privateKey: ec } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    expect(() => Sealer.withKeys(ec)).toThrow(/must be Ed25519/);
  });
});
