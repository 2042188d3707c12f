import { newRunId } from "@durable/core";
import {
  type CheckpointStore,
  InvalidInput,
  type RunPage,
  type RunQuery,
  type RunStatus,
  type RunSummary,
  type StoredCheckpoint,
} from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceGroup } from "./case.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

const rule = (operation: string, expected: string) => breaks("inspection", operation, expected);

/** A store with the inspection capability: `listRuns` and `history` are then known to be there. */
type Inspecting = CheckpointStore & Required<Pick<CheckpointStore, "listRuns" | "history">>;

function inspecting(h: Harness): Inspecting {
  return h.store as Inspecting;
}

/** A flow name of its own per case, so a store shared between cases lists only the case's runs. */
const ownFlow = (): string => `inspect-${newRunId()}`;

/** Waits long enough for the store's clock (ms) to move on, so saves have distinct times. */
const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 15));

/** Saves a run of `flow` at steps 0…last, its last step with `status`. */
async function saveRun(h: Harness, runId: string, flow: string, last: number, status: RunStatus = "running") {
  for (let step = 0; step <= last; step++)
    await h.store.save(runId, step, h.row(runId, step, { name: flow, status: step === last ? status : "running" }));
}

/** Every run of a query, page after page. */
async function everyPage(store: Inspecting, query: RunQuery): Promise<{ runs: RunSummary[]; pages: RunPage[] }> {
  const pages: RunPage[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listRuns({ ...query, ...(cursor === undefined ? {} : { cursor }) });
    pages.push(page);
    cursor = page.next;
  } while (cursor !== undefined && pages.length < 100);
  return { runs: pages.flatMap((page) => page.runs), pages };
}

const ids = (runs: readonly RunSummary[]) => runs.map((run) => run.runId);

export const inspectGroup: ConformanceGroup = {
  name: "inspect",
  proves:
    "a store with the inspection capability lists runs of every status newest first, filtered and paged by a cursor, and keeps every checkpoint of a run (what a console reads)",
  skipFor: (store) =>
    store.listRuns === undefined || store.history === undefined
      ? "the store has no inspection capability (`listRuns` and `history`)"
      : undefined,
  cases: [
    {
      name: "history holds every checkpoint of the run by step, and nothing for an unknown run",
      async run(h) {
        const runId = h.runId();
        const flow = ownFlow();
        await saveRun(h, runId, flow, 3, "done");
        const rows: StoredCheckpoint[] = await inspecting(h).history(runId);
        const operation = "history(runId) of a run saved at steps 0–3";
        expect(
          rows.map((row) => [row.runId, row.step, row.status]),
          rule(operation, "steps 0–3 of the run, in order"),
        ).toEqual([
          [runId, 0, "running"],
          [runId, 1, "running"],
          [runId, 2, "running"],
          [runId, 3, "done"],
        ]);
        expect(rows[3]?.sealed, rule(operation, "each row as saved")).toBe(
          h.row(runId, 3, { name: flow, status: "done" }).sealed,
        );
        expect(await inspecting(h).history(h.runId()), rule("history(unknown)", "an empty list")).toEqual([]);
      },
    },
    {
      name: "runs of every status are listed newest first, with their latest step, segment and name",
      async run(h) {
        const flow = ownFlow();
        const [a, b, c, d] = ["a", "b", "c", "d"].map((label) => h.runId(label)) as [string, string, string, string];
        await saveRun(h, a, flow, 1, "failed");
        await tick();
        await saveRun(h, b, flow, 0, "done");
        await tick();
        await saveRun(h, c, flow, 2, "paused");
        await tick();
        await saveRun(h, d, flow, 0);
        const operation = "listRuns({ name }) after runs a (failed), b (done), c (paused), d (running) were saved";
        const { runs } = await inspecting(h).listRuns({ name: flow });
        expect(ids(runs), rule(operation, "d, c, b, a: newest first")).toEqual([d, c, b, a]);
        const c0 = runs[1];
        expect(
          c0 && { step: c0.step, status: c0.status, segment: c0.segment, name: c0.name, kind: c0.kind },
          rule(operation, "c at step 2, paused"),
        ).toEqual({ step: 2, status: "paused", segment: 0, name: flow, kind: "flow" });
        expect(
          runs.every((run, i) => i === 0 || (runs[i - 1]?.updatedAt ?? 0) >= run.updatedAt),
          rule(operation, "updatedAt falls from each run to the next"),
        ).toBe(true);
        await tick();
        await h.store.save(a, 2, h.row(a, 2, { name: flow, segment: 1, status: "running" }));
        const again = "listRuns({ name }) after a failed-then-claimed run a saved again";
        const after = await inspecting(h).listRuns({ name: flow });
        expect(ids(after.runs)[0], rule(again, "a first: its latest save is the newest")).toBe(a);
      },
    },
    {
      name: "status, name and run id prefix filter together",
      async run(h) {
        const flow = ownFlow();
        const other = ownFlow();
        const prefix = `p-${newRunId()}`;
        const done = `${prefix}-done`;
        const running = `${prefix}-running`;
        const elsewhere = `${prefix}-other`;
        const unprefixed = h.runId();
        await saveRun(h, done, flow, 1, "done");
        await saveRun(h, running, flow, 0);
        await saveRun(h, elsewhere, other, 0, "done");
        await saveRun(h, unprefixed, flow, 0, "done");
        const list = (query: RunQuery) =>
          inspecting(h)
            .listRuns(query)
            .then((page) => ids(page.runs).sort());
        expect(
          await list({ name: flow, status: ["done"] }),
          rule("listRuns({ name, status: [done] })", "the done runs"),
        ).toEqual([done, unprefixed].sort());
        expect(
          await list({ runIdPrefix: prefix }),
          rule("listRuns({ runIdPrefix })", "every run whose id starts with it, of any name"),
        ).toEqual([done, running, elsewhere].sort());
        expect(
          await list({ runIdPrefix: prefix, name: flow, status: ["running", "paused"] }),
          rule("listRuns({ runIdPrefix, flow, status: [running, paused] })", "only the run matching all three"),
        ).toEqual([running]);
        expect(
          await list({ runIdPrefix: `${prefix}-nothing` }),
          rule("listRuns({ runIdPrefix }) that no run id starts with", "no run"),
        ).toEqual([]);
      },
    },
    {
      name: "pages follow one another by cursor, each run once, the last without a next",
      async run(h) {
        const flow = ownFlow();
        const runIds = Array.from({ length: 7 }, (_, i) => h.runId(`page${i}`));
        for (const runId of runIds) await saveRun(h, runId, flow, 0);
        const store = inspecting(h);
        const { runs, pages } = await everyPage(store, { name: flow, limit: 3 });
        const operation = "listRuns({ name, limit: 3 }) then its next cursors, over 7 runs";
        expect(
          pages.map((page) => page.runs.length),
          rule(operation, "pages of 3, 3 and 1"),
        ).toEqual([3, 3, 1]);
        expect(pages.at(-1)?.next, rule(operation, "no next on the last page")).toBeUndefined();
        expect(ids(runs).sort(), rule(operation, "each run once")).toEqual([...runIds].sort());
        const whole = await store.listRuns({ name: flow, limit: 10 });
        expect(ids(runs), rule(operation, "the same order as one page of 10")).toEqual(ids(whole.runs));
        const first = await store.listRuns({ name: flow, limit: 3 });
        // Saved in the same millisecond as the last pages' runs (a fast store), it is ordered among them by its id:
        // one that sorts above theirs is newer either way, as a run saved later is.
        await saveRun(h, h.runId("zlater"), flow, 0);
        const second = await store.listRuns({ name: flow, limit: 3, ...(first.next ? { cursor: first.next } : {}) });
        expect(
          ids(second.runs),
          rule("a page read by cursor after a newer run was saved", "the same runs as before it was saved"),
        ).toEqual(ids(pages[1]?.runs ?? []));
      },
    },
    {
      name: "a held lease is listed with its owner and expiry; a released one is not",
      async run(h) {
        const flow = ownFlow();
        const held = h.runId("held");
        const released = h.runId("released");
        await h.store.save(held, 0, h.row(held, 0, { name: flow }), { owner: "worker-a", ms: 60_000 });
        await h.store.save(released, 0, h.row(released, 0, { name: flow }), { owner: "worker-b", ms: 60_000 });
        await h.store.release(released, 0, "worker-b");
        const { runs } = await inspecting(h).listRuns({ name: flow });
        const byId = new Map(runs.map((run) => [run.runId, run]));
        const view = await h.store.leaseOf(held);
        const operation = "listRuns({ name }) of a held run and a released one";
        expect(byId.get(held)?.lease, rule(operation, "the held run's lease as leaseOf reads it")).toEqual({
          owner: "worker-a",
          expiresAt: view?.expiresAt,
        });
        expect(byId.get(released)?.lease, rule(operation, "no lease on the released run")).toBeUndefined();
      },
    },
    {
      name: "a query it cannot read is InvalidInput",
      async run(h) {
        const store = inspecting(h);
        const bad: ReadonlyArray<[string, RunQuery]> = [
          ["limit 0", { limit: 0 }],
          ["limit 10,000", { limit: 10_000 }],
          ["status shipped", { status: ["shipped" as RunStatus] }],
          ["a made-up cursor", { cursor: "not-a-cursor" }],
        ];
        for (const [what, query] of bad)
          await expectRejects(InvalidInput, rule(`listRuns(${what})`, "InvalidInput"), store.listRuns(query));
        await expectResolves(rule("listRuns() with no query", "the first page"), store.listRuns());
      },
    },
  ],
};
