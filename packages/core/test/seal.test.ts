import { describe, expect, it } from "vitest";
import { CheckpointStoreCorrupt, InvalidInput } from "../src/index.js";
import { Sealer } from "../src/runner.js";
import { KEY, OLD_KEY } from "./helpers.js";

describe("Sealer", () => {
  it("refuses keys shorter than 32 bytes, as strings and as bytes, and an empty key list", () => {
    expect(() => Sealer.withKeys("x".repeat(31))).toThrow(InvalidInput);
    expect(() => Sealer.withKeys(new Uint8Array(31))).toThrow(/31 bytes; a key needs at least 32/);
    expect(() => Sealer.withKeys([KEY, "short"])).toThrow(/checkpointKey\[1\]/);
    expect(() => Sealer.withKeys([])).toThrow(InvalidInput);
    expect(Sealer.withKeys(new Uint8Array(32)).signs).toBe(true);
  });

  it("opens what it sealed, for the same purpose", () => {
    const sealer = Sealer.withKeys(KEY);
    const value = { b: [1, "two"], a: null };
    expect(sealer.open("call", sealer.seal("call", value), { runId: "r" })).toEqual(value);
  });

  it("finds a change of any single byte", () => {
    const sealer = Sealer.withKeys(KEY);
    const sealed = sealer.seal("checkpoint", { state: { seats: 2, show: "Hamlet" }, step: 3 });
    for (let i = 0; i < sealed.length; i++) {
      const changed = sealed.slice(0, i) + String.fromCharCode(sealed.charCodeAt(i) ^ 1) + sealed.slice(i + 1);
      expect(() => sealer.open("checkpoint", changed, { runId: "r" }), `byte ${i}`).toThrow(CheckpointStoreCorrupt);
    }
  });

  it("refuses an envelope sealed with another key", () => {
    const sealed = Sealer.withKeys(OLD_KEY).seal("call", { x: 1 });
    expect(() => Sealer.withKeys(KEY).open("call", sealed, { runId: "r" })).toThrow(CheckpointStoreCorrupt);
  });

  it("refuses an envelope sealed for another purpose", () => {
    const sealer = Sealer.withKeys(KEY);
    expect(() => sealer.open("checkpoint", sealer.seal("call", { x: 1 }), { runId: "r" })).toThrow(/does not match/);
  });

  it("rotates keys: the first key signs, every key verifies", () => {
    const old = Sealer.withKeys(OLD_KEY);
    const rotated = Sealer.withKeys([KEY, OLD_KEY]);
    const fromOld = old.seal("call", { n: 1 });
    expect(rotated.open("call", fromOld, { runId: "r" })).toEqual({ n: 1 });
    const fromRotated = rotated.seal("call", { n: 2 });
    expect(Sealer.withKeys(KEY).open("call", fromRotated, { runId: "r" })).toEqual({ n: 2 });
    expect(() => old.open("call", fromRotated, { runId: "r" })).toThrow(CheckpointStoreCorrupt);
  });

  it("keeps signed and unsigned envelopes apart", () => {
    const unsigned = Sealer.unsigned();
    const signed = Sealer.withKeys(KEY);
    expect(unsigned.signs).toBe(false);
    expect(unsigned.open("call", unsigned.seal("call", 1), { runId: "r" })).toBe(1);
    expect(() => signed.open("call", unsigned.seal("call", 1), { runId: "r" })).toThrow(CheckpointStoreCorrupt);
    expect(() => unsigned.open("call", signed.seal("call", 1), { runId: "r" })).toThrow(CheckpointStoreCorrupt);
  });

  it("refuses what is not an envelope", () => {
    const sealer = Sealer.withKeys(KEY);
    for (const junk of ["", "d1", "d2.x.{}", "garbage"]) {
      expect(() => sealer.open("call", junk, { runId: "r" })).toThrow(CheckpointStoreCorrupt);
    }
  });

  it("refuses to seal a value that is not plain JSON, naming it", () => {
    expect(() => Sealer.withKeys(KEY).seal("checkpoint", { when: new Date() }, "state")).toThrow(/state\.when: a Date/);
  });
});
