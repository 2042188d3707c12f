import { DurableRun, readCallLog } from "@durable/core/runner";
import { expect } from "vitest";
import { unfinished } from "./read.js";
import type { ConformanceGroup } from "./case.js";
import { retainedHeap } from "./heap.js";
import { breaks } from "./rule.js";

const RECORDS = 10_000;
/** Records a commit holds in the 10,000-record case: under `MAX_BATCH_WRITES`. */
const BATCH = 500;
const RUNS = 10_000;
/** The length of each listed run id, near the 256 allowed, so holding every id costs RUNS × ID_LENGTH bytes or more. */
const ID_LENGTH = 240;

const rule = (operation: string, expected: string) => breaks("the-store-rules", operation, expected);

export const scaleGroup: ConformanceGroup = {
  name: "scale",
  proves: "a 1 MB state, 10,000 call records on one run and 10,000 unfinished runs are kept and read back whole",
  cases: [
    {
      name: "a 1 MB state round-trips and verifies",
      timeout: 60_000,
      async run(h) {
        const runId = h.runId();
        const data = { items: Array.from({ length: 1024 }, (_, i) => ({ i, text: "x".repeat(1000) })) };
        await h.store.save(runId, 0, h.row(runId, 0, { data }));
        expect(
          (await h.store.latest(runId)).sealed.length,
          rule("latest(runId) of a 1 MB state", "the whole sealed row"),
        ).toBeGreaterThan(1_000_000);
        expect(
          (await DurableRun.latest(h.store, h.sealer, runId)).data,
          rule("latest(runId) of a 1 MB state", "the state saved"),
        ).toEqual(data);
      },
    },
    {
      name: `${RECORDS.toLocaleString("en")} call records on one run are kept in order`,
      timeout: 300_000,
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        // Written in batches where the store commits them (a store's one-by-one path is proven by the other
        // groups): at a few ms a write, 10,000 single writes through an ORM took 40 s and proved nothing more.
        const commit = h.store.commit?.bind(h.store);
        if (commit === undefined) await h.recordCalls(runId, 0, 0, RECORDS);
        else
          for (let from = 0; from < RECORDS; from += BATCH) {
            const seqs = Array.from({ length: Math.min(BATCH, RECORDS - from) }, (_, i) => from + i);
            await commit(
              runId,
              seqs.map((seq) => ({ kind: "record", segment: 0, seq, sealed: h.call(runId, 0, seq) })),
            );
          }
        await h.store.save(runId, 1, h.row(runId, 1, { calls: [RECORDS] }));
        const records = await readCallLog(h.store, h.sealer, runId, [RECORDS]);
        expect(records, rule(`calls(runId) of a run with ${RECORDS} records`, "every record")).toHaveLength(RECORDS);
        expect(
          records.at(-1)?.seq,
          rule(`calls(runId) of a run with ${RECORDS} records`, `the last one seq ${RECORDS - 1}`),
        ).toBe(RECORDS - 1);
      },
    },
    {
      name: `${RUNS.toLocaleString("en")} unfinished runs are streamed, all listed, and no ended one`,
      timeout: 300_000,
      async run(h) {
        const flow = h.runId("flow");
        const prefix = h.runId("scale");
        const ids = Array.from({ length: RUNS }, (_, i) => `${prefix}-${i}-`.padEnd(ID_LENGTH, "x"));
        for (let i = 0; i < ids.length; i += 50) {
          await Promise.all(
            ids.slice(i, i + 50).map((runId) => h.store.save(runId, 0, h.row(runId, 0, { name: flow }))),
          );
        }
        const ended = h.runId("ended");
        await h.store.save(ended, 0, h.row(ended, 0, { name: flow, status: "done" }));

        // A full listing first: it checks every id, and warms the store (connections, loaded scripts, caches),
        // so the heap measured below is what listing itself holds.
        const listed = await unfinished(h.store, flow);
        expect(
          listed,
          rule(`listUnfinished(flow) of ${RUNS} unfinished runs and an ended one`, `${RUNS} ids`),
        ).toHaveLength(RUNS);
        expect(
          listed,
          rule(
            `listUnfinished(flow) of ${RUNS} unfinished runs and an ended one`,
            "every unfinished id once, not the ended one",
          ),
        ).toEqual([...ids].sort());

        // Streaming, judged by the heap the store holds once it gave its first id: a store that read every id
        // first holds at least RUNS × ID_LENGTH bytes of them, one that reads a page at a time a page's worth.
        // Retained heap after a full collection is deterministic, unlike timings on a busy machine, and the
        // bound (half of every id) leaves room for a page of up to RUNS / 2 ids and the driver's buffers.
        // The least of three tries: code the engine compiles in the background on a busy machine lands
        // on the heap at any moment, once; a store that holds every id holds them every time.
        let held = Number.POSITIVE_INFINITY;
        for (let attempt = 0; attempt < 3; attempt++) {
          const before = retainedHeap();
          const iterator = h.store.listUnfinished(flow)[Symbol.asyncIterator]();
          const first = await iterator.next();
          held = Math.min(held, retainedHeap() - before);
          await iterator.return?.();
          expect(first.done, rule("listUnfinished(flow) of 10,000 unfinished runs", "a first id")).toBe(false);
        }
        const bound = (RUNS * ID_LENGTH) / 2;
        expect(
          held,
          rule(
            `listUnfinished(flow) of ${RUNS} runs, heap held once the first id came`,
            `under ${bound} bytes, half of what holding every id costs: it streams, a page at a time`,
          ),
        ).toBeLessThan(bound);
      },
    },
  ],
};
