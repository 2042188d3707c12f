import type { LeaseClaim } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase } from "./case.js";
import { sleep } from "./clock.js";
import { LONG_MS, leaseRule, OWNER_A, PAST_MS, SHORT_MS } from "./lease-checks.js";
import { unfinished } from "./read.js";

/** Saves at once per batch, as the scale group does: enough to keep a store busy, not so many that a pool queues for long. */
const BATCH = 50;

/** One kind of run of the listing: how it is left, and whether a claimable listing gives it. */
interface Kind {
  readonly name: string;
  readonly count: number;
  readonly claimable: boolean;
  /** Whether a plain listing gives it (running or paused). */
  readonly unfinished: boolean;
  /** Step 0's status and lease. */
  readonly status: "running" | "paused" | "done";
  readonly lease: LeaseClaim | undefined;
  /** What happens to the run after every run is saved. */
  readonly afterwards?: (h: Harness, runId: string) => Promise<unknown>;
}

const KINDS: readonly Kind[] = [
  { name: "live", count: 120, claimable: false, unfinished: true, status: "running", lease: longLease() },
  {
    name: "renewed",
    count: 30,
    claimable: false,
    unfinished: true,
    status: "running",
    lease: shortLease(),
    afterwards: (h, runId) => h.store.renew(runId, 0, longLease()),
  },
  { name: "paused", count: 30, claimable: false, unfinished: true, status: "paused", lease: longLease() },
  { name: "done", count: 15, claimable: false, unfinished: false, status: "done", lease: longLease() },
  { name: "ran-out", count: 30, claimable: true, unfinished: true, status: "running", lease: shortLease() },
  {
    name: "released",
    count: 30,
    claimable: true,
    unfinished: true,
    status: "running",
    lease: longLease(),
    afterwards: (h, runId) => h.store.release(runId, 0, OWNER_A),
  },
  { name: "unleased", count: 30, claimable: true, unfinished: true, status: "running", lease: undefined },
  {
    name: "zero-length",
    count: 15,
    claimable: true,
    unfinished: true,
    status: "running",
    lease: { owner: OWNER_A, ms: 0 },
  },
];
const RUNS = KINDS.reduce((sum, kind) => sum + kind.count, 0);

function longLease(): LeaseClaim {
  return { owner: OWNER_A, ms: LONG_MS };
}
function shortLease(): LeaseClaim {
  return { owner: OWNER_A, ms: SHORT_MS };
}

/** Runs `each` over `items`, BATCH at a time. */
async function inBatches<T>(items: readonly T[], each: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await Promise.all(items.slice(i, i + BATCH).map(each));
}

export const leaseListingCase: ConformanceCase = {
  name: `of ${RUNS} runs, half of them leased, the claimable listing gives exactly the running runs with no live lease, each once`,
  timeout: 120_000,
  async run(h) {
    const flow = h.runId("flow");
    const runs = KINDS.flatMap((kind) =>
      Array.from({ length: kind.count }, (_, i) => ({ kind, runId: h.runId(`${kind.name}-${i}`) })),
    );
    await inBatches(runs, ({ kind, runId }) =>
      h.store.save(runId, 0, h.row(runId, 0, { name: flow, status: kind.status }), kind.lease),
    );
    // The last short lease was taken before this instant; waiting from here outlasts every one of them.
    const shortLeasesTaken = Date.now();
    await inBatches(runs, ({ kind, runId }) => kind.afterwards?.(h, runId) ?? Promise.resolve());
    const other = h.runId("other-flow");
    await h.store.save(other, 0, h.row(other, 0, { name: `${flow}-other` }));
    await sleep(Math.max(0, shortLeasesTaken + SHORT_MS + PAST_MS - Date.now()));

    const ids = (keep: (kind: Kind) => boolean) =>
      runs
        .filter((run) => keep(run.kind))
        .map((run) => run.runId)
        .sort();
    const breakdown = KINDS.map((k) => `${k.count} ${k.name}`).join(", ");
    expect(
      await unfinished(h.store, flow, { claimable: true }),
      leaseRule(
        `listUnfinished(flow, { claimable: true }) over ${breakdown} runs and another flow's`,
        "the ran-out, released, unleased and zero-length runs' ids, each once",
      ),
    ).toEqual(ids((kind) => kind.claimable));
    expect(
      await unfinished(h.store, flow),
      leaseRule(`listUnfinished(flow) over ${breakdown} runs`, "every running and paused run's id, leased or not"),
    ).toEqual(ids((kind) => kind.unfinished));
  },
};
