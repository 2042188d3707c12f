import type { JsonValue } from "@durable/core";
import { type SealedColumns, Sealer, type SealPurpose, type JsonObject } from "@durable/core/runner";
import { KIT_ENCRYPTION_KEY, KIT_KEY } from "../harness/harness.js";
import type { RawAccess } from "../harness/initializer.js";
import { kitSealer } from "../process/scenarios.js";

/**
 * A flow run cut short before its approval: checkpoints 0–2, the latest
 * counting its 10 call records (segment 0: two per call, and the retried
 * notify's `failed` and second `started`).
 */
export const LATEST_STEP = 2;
const RECORDS = 10;

const FORGER_KEY = "a key the workers do not have, 0123456789";
/** Holds neither of the workers' keys. */
const FORGER = Sealer.withKeys(FORGER_KEY);
/** Holds the workers' encryption key, not their signing key: a reader who decrypts. */
const READER = Sealer.withKeys(FORGER_KEY, KIT_ENCRYPTION_KEY);
/** Holds the workers' signing key, not their encryption key. */
const SIGNER = Sealer.withKeys(KIT_KEY, "an encryption key the workers do not have, 0123456789");
/** Encrypts as the workers do, and signs nothing: re-encrypts a changed body under a kept signature. */
const ENCRYPTOR = Sealer.unsigned(KIT_ENCRYPTION_KEY);

/** A change to a run's stored rows, past the store's API. */
export interface Tamper {
  readonly name: string;
  apply(raw: RawAccess, runId: string, other: string): Promise<void>;
}

/** One stored row of the run: how to read and write it, and the plain columns stored beside it. */
interface RowIO {
  readonly purpose: SealPurpose;
  read(raw: RawAccess, runId: string): Promise<string>;
  write(raw: RawAccess, runId: string, sealed: string): Promise<void>;
  columns(runId: string): SealedColumns;
}

/** An envelope in its parts; `body` decrypted when the content is encrypted. */
interface Parts {
  readonly version: string;
  readonly mac: string;
  readonly content: string;
  readonly body: JsonObject;
  readonly encrypted: boolean;
}

function split(sealed: string): { version: string; mac: string; content: string } {
  const [version, mac] = sealed.split(".", 2) as [string, string];
  return { version, mac, content: sealed.slice(version.length + mac.length + 2) };
}

function parts(sealed: string, io: RowIO, runId: string): Parts {
  const { version, mac, content } = split(sealed);
  const encrypted = content.startsWith("a256gcm:");
  const body = (encrypted ? kitSealer.open(io.purpose, sealed, io.columns(runId)) : JSON.parse(content)) as JsonObject;
  return { version, mac, content, body, encrypted };
}

/** The envelope with another body under its own signature: re-encrypted as the workers encrypt, when it was. */
function withBody(p: Parts, io: RowIO, body: JsonValue): string {
  const content = p.encrypted ? split(ENCRYPTOR.seal(io.purpose, body)).content : JSON.stringify(body);
  return `${p.version}.${p.mac}.${content}`;
}

/** Another value of the same JSON type. */
function changed(value: JsonValue | undefined): JsonValue {
  if (typeof value === "string") return `${value}x`;
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (Array.isArray(value)) return [...value, "x"];
  if (value !== null && typeof value === "object") return { ...value, tampered: true };
  return "x";
}

/** The text with one character changed, at `at` (negative: from the end). */
function flipped(text: string, at: number): string {
  const i = at < 0 ? text.length + at : at;
  return `${text.slice(0, i)}${text[i] === "A" ? "B" : "A"}${text.slice(i + 1)}`;
}

function rewrite(io: RowIO, change: (p: Parts, runId: string) => string): Tamper["apply"] {
  return async (raw, runId) => io.write(raw, runId, change(parts(await io.read(raw, runId), io, runId), runId));
}

/** For each field of a sealed body: its value changed, and the field removed, keeping the signature. */
function fieldTampers(kind: string, sample: JsonObject, io: RowIO): Tamper[] {
  return Object.keys(sample).flatMap((field): Tamper[] => [
    {
      name: `${kind}: ${field} changed`,
      apply: rewrite(io, (p) => withBody(p, io, { ...p.body, [field]: changed(p.body[field]) })),
    },
    {
      name: `${kind}: ${field} removed`,
      apply: rewrite(io, (p) => {
        const body = { ...p.body };
        delete body[field];
        return withBody(p, io, body);
      }),
    },
  ]);
}

/** What every row gets: its signature, version, framing and content broken, forged bodies, and the swaps given. */
function rowTampers(
  kind: string,
  io: RowIO,
  swaps: Record<string, (raw: RawAccess, runId: string, other: string) => Promise<void>>,
): Tamper[] {
  const change = (name: string, fn: (p: Parts, runId: string) => string): Tamper => ({
    name: `${kind}: ${name}`,
    apply: rewrite(io, fn),
  });
  const sealedBy = (sealer: Sealer) => (p: Parts) => sealer.seal(io.purpose, p.body);
  return [
    change("signature changed", (p) => `${p.version}.${flipped(p.mac, -1)}.${p.content}`),
    change("signature removed", (p) => `${p.version}..${p.content}`),
    change("version changed", (p) => `${p.version === "d1" ? "d2" : "d1"}.${p.mac}.${p.content}`),
    change("content changed at its start", (p) => `${p.version}.${p.mac}.${flipped(p.content, 12)}`),
    change("content changed at its end", (p) => `${p.version}.${p.mac}.${flipped(p.content, -2)}`),
    change("body re-sealed with another key", sealedBy(FORGER)),
    change("body changed and re-sealed with another key", (p) =>
      FORGER.seal(io.purpose, { ...p.body, runId: `${String(p.body["runId"])}x` }),
    ),
    change("body re-sealed by a reader who holds the encryption key, not the signing key", sealedBy(READER)),
    change("body re-sealed with the signing key and another encryption key", sealedBy(SIGNER)),
    change("body cut off", (p) => `${p.version}.${p.mac}.${p.content}`.slice(0, -5)),
    change("not an envelope", () => "tampered"),
    ...Object.entries(swaps).map(([name, apply]) => ({ name: `${kind}: ${name}`, apply })),
  ];
}

/** Every way the kit changes the run's latest checkpoint. */
export function checkpointTampers(flow: string): Tamper[] {
  const io: RowIO = {
    purpose: "checkpoint",
    read: (raw, id) => raw.readCheckpoint(id, LATEST_STEP),
    write: (raw, id, sealed) => raw.writeCheckpoint(id, LATEST_STEP, sealed),
    columns: (runId) => ({ runId, step: LATEST_STEP, status: "running", segment: 0, name: flow, kind: "flow" }),
  };
  // The body as it is sealed (the run's name under `flow`): each field is changed in turn.
  const sample = { runId: "", step: 0, status: "", segment: 0, flow: "", kind: "", identity: {}, calls: [0], data: {} };
  return [
    ...fieldTampers("checkpoint", sample, io),
    ...rowTampers("checkpoint", io, {
      "the row of step 1 in its place": async (raw, id) => io.write(raw, id, await raw.readCheckpoint(id, 1)),
      "the same step of another run in its place": async (raw, id, other) =>
        io.write(raw, id, await io.read(raw, other)),
      "a call record in its place": async (raw, id) => io.write(raw, id, await raw.readCall(id, 0, RECORDS - 1)),
      // Versions are sealed, never a plain column: a store cannot hand a run to another version's code.
      "its version set to another under the kept signature": rewrite(io, (p) =>
        withBody(p, io, { ...p.body, data: { ...(p.body["data"] as JsonObject | undefined), version: 2 } }),
      ),
    }),
  ];
}

/** Every way the kit changes the run's call log. */
export function callTampers(): Tamper[] {
  const io: RowIO = {
    purpose: "call",
    read: (raw, id) => raw.readCall(id, 0, 1),
    write: (raw, id, sealed) => raw.writeCall(id, 0, 1, sealed),
    columns: (runId) => ({ runId, segment: 0, seq: 1 }),
  };
  const sample = { runId: "", segment: 0, seq: 0, round: 0, callId: "", tool: "", kind: "", args: {}, result: "" };
  const deleted = (seq: number): Tamper => ({
    name: `call log: record ${seq} of ${RECORDS} deleted`,
    apply: (raw, id) => raw.deleteCall(id, 0, seq),
  });
  return [
    ...fieldTampers("call record", sample, io),
    ...rowTampers("call record", io, {
      "swapped with the next record": async (raw, id) => {
        const [one, two] = [await raw.readCall(id, 0, 1), await raw.readCall(id, 0, 2)];
        await raw.writeCall(id, 0, 1, two);
        await raw.writeCall(id, 0, 2, one);
      },
      "the next record copied over it": async (raw, id) => io.write(raw, id, await raw.readCall(id, 0, 2)),
      "the same record of another run in its place": async (raw, id, other) =>
        io.write(raw, id, await io.read(raw, other)),
      "a checkpoint in its place": async (raw, id) => io.write(raw, id, await raw.readCheckpoint(id, LATEST_STEP)),
    }),
    deleted(0),
    deleted(RECORDS / 2),
    deleted(RECORDS - 1),
  ];
}
