import {
  CheckpointConflict,
  type CheckpointStore,
  CheckpointNotFound,
  InvalidInput,
  LeaseHeld,
  MAX_BATCH_WRITES,
  type RunWrite,
} from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import { batchKillCase } from "./batch-kill.js";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

/** What a batch of a store that batches is given: `commit` is then known to be there. */
type Batching = CheckpointStore & Required<Pick<CheckpointStore, "commit">>;

function batching(h: Harness): Batching {
  return h.store as Batching;
}

const record = (h: Harness, runId: string, segment: number, seq: number, callId = `call-${seq}`): RunWrite => ({
  kind: "record",
  segment,
  seq,
  sealed: h.call(runId, segment, seq, { callId }),
});

/** Everything a store holds of a run, to compare before and after a refused batch. */
async function snapshot(store: CheckpointStore, runId: string) {
  const latest = await store.latest(runId).then(
    (row) => row,
    (error: unknown) => (error instanceof CheckpointNotFound ? undefined : Promise.reject(error)),
  );
  const lease = await store.leaseOf(runId);
  return { latest, calls: await store.calls(runId), lease: lease && { owner: lease.owner, at: lease.expiresAt } };
}

/** A refused batch: its first refusal, and nothing of it written. */
interface Refusal {
  readonly name: string;
  /** Leaves the run as the batch finds it. */
  setup(h: Harness, runId: string): Promise<void>;
  batch(h: Harness, runId: string): RunWrite[];
  readonly error: typeof CheckpointConflict | typeof CheckpointNotFound | typeof LeaseHeld;
}

const REFUSALS: readonly Refusal[] = [
  {
    name: "a gap in the records after good ones",
    setup: (h, runId) => h.store.save(runId, 0, h.row(runId, 0)),
    batch: (h, runId) => [record(h, runId, 0, 0), record(h, runId, 0, 1), record(h, runId, 0, 3)],
    error: CheckpointConflict,
  },
  {
    name: "a duplicate record after good ones",
    setup: async (h, runId) => {
      await h.store.save(runId, 0, h.row(runId, 0));
      await h.recordCalls(runId, 0, 0, 1);
    },
    batch: (h, runId) => [record(h, runId, 0, 1), record(h, runId, 0, 1, "dup")],
    error: CheckpointConflict,
  },
  {
    name: "a taken step after good records",
    setup: (h, runId) => h.saveSteps(runId, 1),
    batch: (h, runId) => [record(h, runId, 0, 0), { kind: "save", step: 1, row: h.row(runId, 1) }],
    error: CheckpointConflict,
  },
  {
    name: "a record of a fenced segment after a good checkpoint",
    setup: async (h, runId) => {
      await h.store.save(runId, 0, h.row(runId, 0));
      await h.store.save(runId, 1, h.row(runId, 1, { segment: 1 }));
    },
    batch: (h, runId) => [{ kind: "save", step: 2, row: h.row(runId, 2, { segment: 1 }) }, record(h, runId, 0, 0)],
    error: CheckpointConflict,
  },
  {
    name: "a record of the old segment after a claim in the same batch",
    setup: (h, runId) => h.store.save(runId, 0, h.row(runId, 0)),
    batch: (h, runId) => [
      record(h, runId, 0, 0),
      { kind: "save", step: 1, row: h.row(runId, 1, { segment: 1 }) },
      record(h, runId, 0, 1),
    ],
    error: CheckpointConflict,
  },
  {
    name: "a record after the batch's own checkpoint ended the run",
    setup: (h, runId) => h.store.save(runId, 0, h.row(runId, 0)),
    batch: (h, runId) => [{ kind: "save", step: 1, row: h.row(runId, 1, { status: "done" }) }, record(h, runId, 0, 0)],
    error: CheckpointConflict,
  },
  {
    name: "records of an ended run",
    setup: (h, runId) => h.store.save(runId, 0, h.row(runId, 0, { status: "done" })),
    batch: (h, runId) => [record(h, runId, 0, 0)],
    error: CheckpointConflict,
  },
  {
    name: "records of an unknown run",
    setup: async () => {},
    batch: (h, runId) => [record(h, runId, 0, 0)],
    error: CheckpointNotFound,
  },
  {
    name: "a claim of another owner's live lease after good records",
    setup: (h, runId) => h.store.save(runId, 0, h.row(runId, 0), { owner: "holder", ms: 60_000 }),
    batch: (h, runId) => [
      record(h, runId, 0, 0),
      { kind: "save", step: 1, row: h.row(runId, 1, { segment: 1 }), lease: { owner: "claimer", ms: 60_000 } },
    ],
    error: LeaseHeld,
  },
];

const MALFORMED: ReadonlyArray<[string, (h: Harness, runId: string) => RunWrite[]]> = [
  ["an empty batch", () => []],
  [
    "two checkpoints",
    (h, runId) => [
      { kind: "save", step: 1, row: h.row(runId, 1) },
      { kind: "save", step: 2, row: h.row(runId, 2) },
    ],
  ],
  [
    `${MAX_BATCH_WRITES + 1} writes`,
    (h, runId) => Array.from({ length: MAX_BATCH_WRITES + 1 }, (_, seq) => record(h, runId, 0, seq)),
  ],
  ["a seq of -1", (h, runId) => [{ ...record(h, runId, 0, 0), seq: -1 } as RunWrite]],
  ["a write of unknown kind", (h, runId) => [{ ...record(h, runId, 0, 0), kind: "erase" } as unknown as RunWrite]],
];

export const batchGroup: ConformanceGroup = {
  name: "batch",
  proves:
    "a batch of call records and a checkpoint (commit) lands whole or not at all, each write by its own rules in order, and racing batches have one winner",
  skipFor: (store) =>
    store.commit === undefined
      ? "the store has no `commit` (it does not batch: the runner writes one at a time)"
      : undefined,
  cases: [
    {
      name: "records, a checkpoint and records after it land together, numbered on from what the run holds",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.recordCalls(runId, 0, 0, 1);
        const writes: RunWrite[] = [
          record(h, runId, 0, 1),
          record(h, runId, 0, 2),
          { kind: "save", step: 1, row: h.row(runId, 1, { calls: [3] }) },
          record(h, runId, 0, 3),
        ];
        const operation = "commit(runId, [records 1–2, save(step 1), record 3]) of a run at step 0 holding record 0";
        await expectResolves(rule(operation, "it is accepted"), batching(h).commit(runId, writes));
        expect((await h.store.latest(runId)).step, rule(operation, "latest is step 1")).toBe(1);
        expect(
          (await h.store.calls(runId)).map((c) => c.sealed),
          rule(operation, "records 0–3 in order, as sealed"),
        ).toEqual([0, 1, 2, 3].map((seq) => h.call(runId, 0, seq)));
      },
    },
    {
      name: "a batch starts a run, and a claim in a batch numbers the records after it from 0 in the new segment",
      async run(h) {
        const runId = h.runId();
        const start = "commit(runId, [save(step 0), record 0]) of an unknown run";
        await expectResolves(
          rule(start, "it is accepted"),
          batching(h).commit(runId, [{ kind: "save", step: 0, row: h.row(runId, 0) }, record(h, runId, 0, 0)]),
        );
        const claim = "commit(runId, [save(step 1, segment 1), record 0 of segment 1])";
        await expectResolves(
          rule(claim, "it is accepted"),
          batching(h).commit(runId, [
            { kind: "save", step: 1, row: h.row(runId, 1, { segment: 1, calls: [1, 0] }) },
            record(h, runId, 1, 0),
          ]),
        );
        expect(
          (await h.store.calls(runId)).map((c) => [c.segment, c.seq]),
          rule(claim, "[[0, 0], [1, 0]]"),
        ).toEqual([
          [0, 0],
          [1, 0],
        ]);
        await expectRejects(
          CheckpointConflict,
          rule(
            "recordCall(runId, segment 0) after a batch claimed segment 1",
            "CheckpointConflict: the claim fenced it",
          ),
          h.store.recordCall(runId, 0, 1, h.call(runId, 0, 1)),
        );
      },
    },
    {
      name: "a running checkpoint in a batch takes its lease, and a claim in a batch is refused by another owner's live lease",
      async run(h) {
        const runId = h.runId();
        await batching(h).commit(runId, [
          { kind: "save", step: 0, row: h.row(runId, 0), lease: { owner: "a", ms: 60_000 } },
        ]);
        expect((await h.store.leaseOf(runId))?.owner, rule("leaseOf after a batch saved with a's lease", "a")).toBe(
          "a",
        );
        const takeOver = "commit(runId, [save(step 1, segment 1, b's lease, takeOver)])";
        await expectResolves(
          rule(takeOver, "it is accepted"),
          batching(h).commit(runId, [
            {
              kind: "save",
              step: 1,
              row: h.row(runId, 1, { segment: 1 }),
              lease: { owner: "b", ms: 60_000, takeOver: true },
            },
          ]),
        );
        expect((await h.store.leaseOf(runId))?.owner, rule(`leaseOf after ${takeOver}`, "b")).toBe("b");
      },
    },
    ...REFUSALS.map((refusal): ConformanceGroup["cases"][number] => ({
      name: `refuses ${refusal.name} with ${refusal.error.name}, and writes nothing of the batch`,
      async run(h) {
        const runId = h.runId();
        await refusal.setup(h, runId);
        const before = await snapshot(h.store, runId);
        const operation = `commit(runId, …) with ${refusal.name}`;
        await expectRejects(
          refusal.error,
          rule(operation, refusal.error.name),
          batching(h).commit(runId, refusal.batch(h, runId)),
        );
        expect(
          await snapshot(h.store, runId),
          rule(
            `the run after ${operation}`,
            "exactly what it held before: no write of the batch, not even those before the refused one",
          ),
        ).toEqual(before);
      },
    })),
    {
      name: "refuses a malformed batch with InvalidInput, writing nothing",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        const before = await snapshot(h.store, runId);
        for (const [what, batch] of MALFORMED) {
          await expectRejects(
            InvalidInput,
            rule(`commit(runId, …) of ${what}`, "InvalidInput"),
            batching(h).commit(runId, batch(h, runId)),
          );
        }
        expect(
          await snapshot(h.store, runId),
          rule("the run after the malformed batches", "what it held before"),
        ).toEqual(before);
      },
    },
    {
      name: "of 8 clients committing a batch on the same step at once, exactly one wins and only its records are kept",
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        const clients =
          h.init.capabilities?.connect === undefined
            ? [h.store]
            : await Promise.all(Array.from({ length: 8 }, () => h.connect()));
        const outcomes = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            (clients[i % clients.length] as Batching).commit(runId, [
              record(h, runId, 0, 0, `racer-${i}`),
              { kind: "save", step: 1, row: h.row(runId, 1, { calls: [1], data: { racer: i } }) },
              record(h, runId, 0, 1, `racer-${i}`),
            ]),
          ),
        );
        const won = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i] : []));
        const operation = "8 batches [record 0, save(step 1), record 1] at once on a run at step 0";
        expect(won, rule(operation, "exactly one accepted")).toHaveLength(1);
        for (const o of outcomes) {
          if (o.status === "rejected")
            expect(o.reason, rule(operation, "the others CheckpointConflict")).toBeInstanceOf(CheckpointConflict);
        }
        const winner = won[0] ?? -1;
        expect(
          (await h.store.calls(runId)).map((c) => c.sealed),
          rule(operation, "the winner's two records only"),
        ).toEqual([
          h.call(runId, 0, 0, { callId: `racer-${winner}` }),
          h.call(runId, 0, 1, { callId: `racer-${winner}` }),
        ]);
      },
    },
    batchKillCase,
  ],
};
