import { describe, expect, it } from "vitest";
import * as core from "@durable/core";
import { MemoryCheckpointStore } from "../src/index.js";

describe("@durable/store-memory", () => {
  it("gives core's MemoryCheckpointStore itself: one class, whichever package a user imports it from", () => {
    expect(MemoryCheckpointStore).toBe(core.MemoryCheckpointStore);
  });

  it("its store keeps the protocol: a second step 0 is refused", async () => {
    const store = new MemoryCheckpointStore();
    const row = { status: "running", segment: 0, name: "tickets", kind: "flow", sealed: "d1.-.{}" } as const;
    await store.save("r", 0, row);
    await expect(store.save("r", 0, row)).rejects.toBeInstanceOf(core.CheckpointConflict);
  });
});
