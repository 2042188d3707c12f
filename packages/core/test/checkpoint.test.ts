import { describe, expect, it } from "vitest";
import { type CheckpointStore, CheckpointStoreCorrupt, InvalidInput } from "../src/index.js";
import {
  type CheckpointBody,
  DurableRun,
  MAX_RUN_ID_LENGTH,
  openCheckpoint,
  openHistory,
  Sealer,
  sealCheckpoint,
  sealerFor,
} from "../src/runner.js";
import { KEY, MemoryCheckpointStore, TamperedStore, collect, editSealed, sealer, startRun } from "./helpers.js";

describe("sealed checkpoints", () => {
  it("round-trip every sealed field", async () => {
    const { store } = await startRun();
    const body = openCheckpoint(sealer, await store.latest("run-1"));
    expect(body).toMatchObject({
      runId: "run-1",
      step: 0,
      status: "running",
      segment: 0,
      name: "tickets",
      kind: "flow",
      identity: { user: "ada", thread: "t-1" },
      calls: [0],
      data: { state: { show: "Hamlet", seats: 2 } },
    });
  });

  // Rows an earlier version sealed (the run's name under the key `flow`, signed, and signed and encrypted) open unchanged.
  const EARLIER = {
    plain:
      'd1.hq1iETSTsBnDY9Y6Rw55n9Adklnzx3IwsAf3CP1V1XY.{"calls":[3,1],"data":{"decisions":[],"pending":[],"program":{"state":{"seats":2}},"round":2},"flow":"tickets","identity":{"user":"ada"},"kind":"flow","runId":"old-1","segment":1,"status":"running","step":2}',
    encrypted:
      "d2.hs256:l-3Qgdy-BieiQBewWQ43o5VGYDTOxeNVi6Rv1P8Trvk.a256gcm:wiDyVM8G:sSBnNAwFGfz4YTAAKbl1oEAIBTT6tfpZ6ZHzmJE7Ld4PA8rZB6-_x5AnNzAd1awjnuthC0bJlUIR97C49fDHJTq4SUGynNhSkniHpzT29f1HW3MAWHPI_YTm3RyxLYLPuX3-jyUPMYXPWK6pIDcAgTgi3IqHY58DGyn5R55ygb8JfT_3pZeL0kUHD5Tyhr3f84pqETTat8Pow5f3lDRnv8FQ6AQsnvKC_6NF78Gv-KG8_vfxjk9fARr112qzkxKCIKy3MN8oOG_4rxXzX9eulDrS6lb1KI4u0v5fSD7cTcu_r6xwfBjg7JXjXg",
  };
  it.each(Object.entries(EARLIER))(
    "opens a %s checkpoint an earlier version sealed, and seals the same one again",
    (kind, sealed) => {
      const earlier = Sealer.withKeys("k".repeat(32), kind === "encrypted" ? "e".repeat(32) : undefined);
      const row = {
        runId: "old-1",
        step: 2,
        status: "running",
        segment: 1,
        name: "tickets",
        kind: "flow",
        sealed,
      } as const;
      const [body] = openHistory(earlier, "old-1", [row]) as [CheckpointBody];
      expect(body).toMatchObject({
        runId: "old-1",
        step: 2,
        name: "tickets",
        calls: [3, 1],
        identity: { user: "ada" },
      });
      if (kind === "plain") expect(sealCheckpoint(earlier, body).sealed).toBe(sealed);
      else {
        const { chain: _link, ...plain } = body;
        expect(openCheckpoint(earlier, { ...row, sealed: sealCheckpoint(earlier, body).sealed })).toMatchObject(plain);
      }
      expect(() => openCheckpoint(earlier, { ...row, name: "refunds" })).toThrow(CheckpointStoreCorrupt);
    },
  );

  // Each case changes one sealed field inside the envelope, leaving the signature.
  const sealedEdits: Array<[string, string, string]> = [
    ["state", '"seats":2', '"seats":3'],
    ["step", '"step":0', '"step":1'],
    ["status", '"status":"running"', '"status":"paused"'],
    ["segment", '"segment":0', '"segment":1'],
    ["run id", '"runId":"run-1"', '"runId":"run-2"'],
    ["identity", '"user":"ada"', '"user":"eve"'],
  ];
  it.each(sealedEdits)("finds a changed %s inside the seal", async (_, from, to) => {
    const store = new TamperedStore();
    await startRun(store);
    store.editCheckpoint = (row) => ({ ...row, sealed: editSealed(row.sealed, from, to) });
    await expect(DurableRun.latest(store, sealer, "run-1")).rejects.toThrow(CheckpointStoreCorrupt);
  });

  const columnEdits: Array<[string, object]> = [
    ["step", { step: 1 }],
    ["status", { status: "done" }],
    ["segment", { segment: 4 }],
    ["name", { name: "other" }],
    ["kind", { kind: "loop" }],
    ["run id", { runId: "run-2" }],
  ];
  it.each(columnEdits)("finds a stored %s column that differs from the seal", async (_, edit) => {
    const store = new TamperedStore();
    await startRun(store);
    store.editCheckpoint = (row) => ({ ...row, ...edit });
    await expect(DurableRun.latest(store, sealer, "run-1")).rejects.toThrow(/differs from the sealed one/);
  });

  it("finds a checkpoint read with a wrong key", async () => {
    const { store } = await startRun();
    await expect(DurableRun.latest(store, Sealer.withKeys("w".repeat(32)), "run-1")).rejects.toThrow(
      CheckpointStoreCorrupt,
    );
  });

  it("finds another run's checkpoint put in place of this run's", async () => {
    const store = new TamperedStore();
    await startRun(store, "run-1");
    await startRun(store, "run-2");
    const other = await store.latest("run-2");
    store.editCheckpoint = (row) => (row.runId === "run-1" ? { ...row, sealed: other.sealed } : row);
    await expect(DurableRun.latest(store, sealer, "run-1")).rejects.toThrow(/runId/);
  });
});

describe("bad input writes nothing", () => {
  const states: Array<[string, unknown]> = [
    ["a function", { f: () => 1 }],
    ["a BigInt", { n: 1n }],
    ["a class instance", { d: new Date() }],
    ["undefined in an array", { l: [undefined] }],
    ["NaN", { x: Number.NaN }],
  ];
  it.each(states)("state holding %s is InvalidInput and stores no row", async (_, data) => {
    const store = new MemoryCheckpointStore();
    const start = DurableRun.start({
      store,
      sealer,
      runId: "r",
      name: "f",
      kind: "flow",
      identity: {},
      data: data as never,
    });
    await expect(start).rejects.toThrow(InvalidInput);
    await expect(store.latest("r")).rejects.toThrow(/No checkpoint/);
  });

  it.each([
    ["empty", ""],
    ["over-long", "x".repeat(MAX_RUN_ID_LENGTH + 1)],
    ["control characters", "a\nb"],
  ])("a run id that is %s is InvalidInput and stores no row", async (_, runId) => {
    const store = new MemoryCheckpointStore();
    const start = DurableRun.start({ store, sealer, runId, name: "f", kind: "flow", identity: {}, data: null });
    await expect(start).rejects.toThrow(InvalidInput);
    expect(await collect(store.listUnfinished("f"))).toEqual([]);
  });

  it("requires a key with any store but the in-process one", () => {
    const shared: CheckpointStore = { ...new MemoryCheckpointStore(), inProcessOnly: false } as CheckpointStore;
    expect(() => sealerFor(shared, undefined)).toThrow(/checkpointKey is required/);
    expect(sealerFor(new MemoryCheckpointStore(), undefined).signs).toBe(false);
    expect(sealerFor(shared, KEY).signs).toBe(true);
  });
});
