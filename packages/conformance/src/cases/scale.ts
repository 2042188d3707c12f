import { DurableRun, readCallLog } from "@durable/core";
import { expect } from "vitest";
import { unfinished } from "./read.js";
import type { ConformanceGroup } from "./case.js";

const RECORDS = 10_000;
const RUNS = 10_000;

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
        expect((await h.store.latest(runId)).sealed.length).toBeGreaterThan(1_000_000);
        expect((await DurableRun.latest(h.store, h.sealer, runId)).data).toEqual(data);
      },
    },
    {
      name: `${RECORDS.toLocaleString("en")} call records on one run are kept in order`,
      timeout: 300_000,
      async run(h) {
        const runId = h.runId();
        await h.store.save(runId, 0, h.row(runId, 0));
        await h.recordCalls(runId, 0, 0, RECORDS);
        await h.store.save(runId, 1, h.row(runId, 1, { calls: [RECORDS] }));
        const records = await readCallLog(h.store, h.sealer, runId, [RECORDS]);
        expect(records).toHaveLength(RECORDS);
        expect(records.at(-1)?.seq).toBe(RECORDS - 1);
      },
    },
    {
      name: `${RUNS.toLocaleString("en")} unfinished runs are all listed, and no ended one`,
      timeout: 300_000,
      async run(h) {
        const flow = h.runId("flow");
        const prefix = h.runId("scale");
        const ids = Array.from({ length: RUNS }, (_, i) => `${prefix}-${i}`);
        for (let i = 0; i < ids.length; i += 50) {
          await Promise.all(ids.slice(i, i + 50).map((runId) => h.store.save(runId, 0, h.row(runId, 0, { flow }))));
        }
        const ended = h.runId("ended");
        await h.store.save(ended, 0, h.row(ended, 0, { flow, status: "done" }));
        const listed = await unfinished(h.store, flow);
        expect(listed).toHaveLength(RUNS);
        expect(listed).toEqual([...ids].sort());
      },
    },
  ],
};
