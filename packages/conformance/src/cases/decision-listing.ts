import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase } from "./case.js";
import { LONG_MS, leaseRule, OWNER_A, OWNER_B } from "./lease-checks.js";
import { unfinished } from "./read.js";

/** Runs saved waiting for a decision: enough that a store reading them on every page would be seen doing it. */
const WAITING = 1_000;
const CLAIMABLE = 20;
const BATCH = 50;

/** Saves step 0 with a lease, then step 1 waiting for a decision (its lease released, as a recovery saves it). */
async function saveWaiting(h: Harness, flow: string, runId: string): Promise<void> {
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: LONG_MS });
  await h.store.save(
    runId,
    1,
    { ...h.row(runId, 1, { name: flow }), waitsForDecision: true },
    { owner: OWNER_A, ms: 0 },
  );
}

export const decisionListingCase: ConformanceCase = {
  name: `of ${WAITING.toLocaleString("en")} runs saved waiting for a decision and ${CLAIMABLE} claimable ones, the claimable listing gives the claimable ones only, and a run again once a save without the mark claimed it`,
  timeout: 300_000,
  async run(h) {
    const flow = h.runId("flow");
    const waiting = Array.from({ length: WAITING }, (_, i) => h.runId(`waiting-${i}`));
    const claimable = Array.from({ length: CLAIMABLE }, (_, i) => h.runId(`claimable-${i}`));
    for (let i = 0; i < waiting.length; i += BATCH)
      await Promise.all(waiting.slice(i, i + BATCH).map((runId) => saveWaiting(h, flow, runId)));
    await Promise.all(claimable.map((runId) => h.store.save(runId, 0, h.row(runId, 0, { name: flow }))));

    const listed = await unfinished(h.store, flow, { claimable: true });
    expect(
      listed.filter((runId) => waiting.includes(runId)),
      leaseRule(
        `listUnfinished(flow, { claimable: true }) over ${WAITING} runs whose latest step was saved waitsForDecision`,
        "none of them: a run waiting for a decision is not claimable, and the listing reads past them in one query per page",
      ),
    ).toEqual([]);
    expect(listed, leaseRule("listUnfinished(flow, { claimable: true })", "every claimable run, each once")).toEqual(
      [...claimable].sort(),
    );
    expect(
      (await unfinished(h.store, flow)).length,
      leaseRule("listUnfinished(flow)", "every unfinished run, waiting for a decision or not"),
    ).toBe(WAITING + CLAIMABLE);

    // An operator's decision claims the run (a save without the mark) and releases it: claimable again.
    const decided = waiting[0]!;
    await h.store.save(decided, 2, h.row(decided, 2, { name: flow, segment: 1 }), { owner: OWNER_B, ms: LONG_MS });
    await h.store.release(decided, 1, OWNER_B);
    expect(
      (await unfinished(h.store, flow, { claimable: true })).includes(decided),
      leaseRule(
        "listUnfinished(flow, { claimable: true }) after a run waiting for a decision was claimed by a save without the mark and released",
        "the run listed again",
      ),
    ).toBe(true);
  },
};
