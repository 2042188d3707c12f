import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type RunningConsole, startConsole } from "../src/index.js";
import { detail, formToken, get, post } from "./client.js";
import { closeAll, KEY, orders, payments, runner, seed, type Seeded, worker } from "./fixture.js";

/*
 * "Fork from this step": each step of a run's timeline that did not end it
 * links to a form with the flow's state at that step, which the operator may
 * edit; the console checks an edit with the flow's schema (its `schemas`
 * option) before core's forkRun writes anything, and posts it through the
 * guards of every action.
 */

const dir = mkdtempSync(join(tmpdir(), "durable-console-fork-"));
const events = join(dir, "events.jsonl");
const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
const TOKEN = "fork-test-token-0123456789";
/** A schema that changes what it parses (it trims): an edited state it gives back otherwise is refused. */
const Trimmed = z.object({ timeoutMs: z.number().int().nullable(), paid: z.string().transform((s) => s.trim()) });
const asleep = "f-asleep";
let runs: Seeded;
let actor: RunningConsole;
let reader: RunningConsole;

beforeAll(async () => {
  runs = await seed(store, events, "f");
  await runner(store, events).run(payments, {}, { runId: asleep });
  const common = { store, checkpointKey: KEY, label: "sqlite", port: 0, token: TOKEN, by: "ops@test" };
  actor = await startConsole({ ...common, allowActions: true, schemas: { orders: orders.schema, payments: Trimmed } });
  reader = await startConsole(common);
}, 60_000);

afterAll(() => closeAll(dir, actor, reader, store));

const forkPath = (runId: string, step: number) => `/runs/${encodeURIComponent(runId)}/fork/${step}`;
const html = async (c: RunningConsole, path: string) => (await get(c, path)).text();
/** The run ids the store holds: a refused fork adds none. */
const runIds = async () => ((await store.listRuns?.({ limit: 500 }))?.runs ?? []).map((run) => run.runId).sort();
/** The text of the textarea a page holds, unescaped. */
const stateText = (page: string) =>
  /name="state"[^>]*>([^<]*)<\/textarea>/
    .exec(page)?.[1]
    ?.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
/** The problem a refused post's page shows, unescaped. */
const problem = (page: string) =>
  /<p class="problem" role="alert">([^<]*)<\/p>/
    .exec(page)?.[1]
    ?.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
/** Posts a fork from `from` of `runId` as its fork page would: its form token, the run's step it shows. */
async function fork(runId: string, from: number, fields: Record<string, string>, headers?: Record<string, string>) {
  const page = await html(actor, forkPath(runId, from));
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
  const step = String((await detail(actor, runId)).step);
  return post(actor, runId, { csrf, step, action: "fork", from: String(from), ...fields }, headers);
}

describe("the fork form", () => {
  it("links each step that did not end the run to its form, prefilled with the flow's state at that step", async () => {
    const page = await html(actor, `/runs/${encodeURIComponent(runs.done)}`);
    const linked = [...page.matchAll(/class="fork" href="[^"]*\/fork\/(\d+)"/g)].map((m) => Number(m[1]));
    // Step 3 saved the run done: no fork goes on from it.
    expect(linked).toEqual([0, 1, 2]);
    const form = await html(actor, forkPath(runs.done, 1));
    expect(JSON.parse(stateText(form) ?? "")).toEqual({ show: "Hamlet", seats: 2, note: "held 2 for Hamlet" });
    expect(form).toContain('name="action" value="fork"');
    expect(form).toContain('name="from" value="1"');
    expect(form).toContain("checked with the schema of <code>orders</code>");
    expect(await html(actor, forkPath(runs.done, 3))).toContain(
      "Step 3 ended the run (done): fork from an earlier step.",
    );
    expect((await get(actor, forkPath(runs.done, 9))).status).toBe(404);
  });

  it("says when the console holds no schema for the flow, and gives a loop's fork no state to edit", async () => {
    expect(await html(actor, forkPath(runs.paused, 0))).toContain(
      "The console holds no schema for <code>refunds</code>",
    );
    const loop = await html(actor, forkPath(runs.loop, 1));
    expect(stateText(loop)).toBeUndefined();
    expect(loop).toContain("A loop's fork goes on from its messages at step 1 as they are.");
  });

  it("is not there when actions are not allowed: no link, and its page and its post are refused", async () => {
    expect(await html(reader, `/runs/${encodeURIComponent(runs.done)}`)).not.toContain('class="fork"');
    expect((await get(reader, forkPath(runs.done, 1))).status).toBe(403);
    const before = await runIds();
    const refused = await post(reader, runs.done, {
      csrf: await formToken(actor, runs.paused),
      action: "fork",
      step: "3",
      from: "1",
    });
    expect(refused.status).toBe(403);
    expect(await runIds()).toEqual(before);
  });
});

/** A fork refused for its state: the run and step it is posted for, the state posted, the problem said. */
interface Refusal {
  readonly what: string;
  readonly runId: () => string;
  readonly from: number;
  readonly state: string;
  readonly problem: string | RegExp;
}

const REFUSALS: readonly Refusal[] = [
  {
    what: "a state that is not JSON",
    runId: () => runs.done,
    from: 1,
    state: '{"show": "Hamlet", "seats": 5',
    problem: 'Refused: The state is not JSON: {"show": "Hamlet", "seats": 5',
  },
  {
    what: "a state the flow's schema refuses, naming the field",
    runId: () => runs.done,
    from: 1,
    state: '{"show":"Hamlet","seats":"five","note":""}',
    problem: /^Refused: The state is not valid for flow "orders": seats: /,
  },
  {
    what: "a state that does not parse to itself with the flow's schema",
    runId: () => asleep,
    from: 0,
    state: '{"timeoutMs":3600000,"paid":"  cash  "}',
    problem:
      'Refused: The state does not parse to itself with the schema of flow "payments" (it gives back {"paid":"cash","timeoutMs":3600000}): a flow\'s state must, so write it as the schema gives it back.',
  },
  {
    what: "an edit of a flow the console holds no schema for",
    runId: () => runs.paused,
    from: 0,
    state: '{"show":"Hamlet","seats":9,"note":""}',
    problem:
      'Refused: The console holds no schema for flow "refunds" (its schemas option), so it cannot check an edited state: fork with the state as it is, or start the console with the flow\'s state schema.',
  },
];

describe("a fork refused, with nothing written", () => {
  it.each(REFUSALS)("refuses $what, and its form keeps what was typed", async (refusal) => {
    const before = await runIds();
    const refused = await fork(refusal.runId(), refusal.from, { state: refusal.state });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    expect(problem(page)).toMatch(refusal.problem);
    expect(stateText(page)).toBe(refusal.state);
    expect(await runIds()).toEqual(before);
  });

  it("refuses a post from another site's page, even with both tokens", async () => {
    const before = await runIds();
    const state = '{"show":"Hamlet","seats":5,"note":""}';
    const foreign: Record<string, string>[] = [{ origin: "http://evil.example" }, { "sec-fetch-site": "cross-site" }];
    for (const headers of foreign) {
      const refused = await fork(runs.done, 1, { state }, headers);
      expect(refused.status).toBe(403);
    }
    expect(await runIds()).toEqual(before);
  });
});

describe("a fork made", () => {
  it("goes on without an edit where the console holds no schema: a fork of a paused run waits for its approval", async () => {
    const page = await html(actor, forkPath(runs.paused, 1));
    const made = await fork(runs.paused, 1, { state: stateText(page) ?? "", "run-id": "f-refund-again" });
    expect(made.status).toBe(303);
    expect(made.headers.get("location")).toMatch(/^\/runs\/f-refund-again\?done=Forked%20from%20/);
    const forked = await detail(actor, "f-refund-again");
    expect(forked).toMatchObject({ name: "refunds", status: "paused", forkedFrom: { runId: runs.paused, step: 1 } });
    expect(forked.steps.at(-1)?.operator).toMatchObject({ action: "fork", by: "ops@test" });
    expect((await detail(actor, runs.paused)).status).toBe("paused");
  });

  it("goes on with the edited state, and the worker serving the flow finishes it; the original is unchanged", async () => {
    const original = await detail(actor, runs.done);
    const made = await fork(runs.done, 1, {
      state: '{"show":"Hamlet","seats":5,"note":"held 2 for Hamlet"}',
      "run-id": "f-five-seats",
      reason: "five seats after all",
    });
    expect(made.status).toBe(303);
    const notice = await html(actor, made.headers.get("location") ?? "");
    expect(notice).toContain(`Forked from ${runs.done} at step 1`);
    expect(notice).toContain('<p class="forked-from">Forked from');
    const w = worker(store, events);
    try {
      await expect.poll(async () => (await detail(actor, "f-five-seats")).status, { timeout: 10_000 }).toBe("done");
    } finally {
      await w.stop();
    }
    const forked = await detail(actor, "f-five-seats");
    expect((forked.steps.at(-1)?.program as { state?: unknown } | undefined)?.state).toEqual({
      show: "Hamlet",
      seats: 5,
      note: "mailed Hamlet",
    });
    expect(forked.calls.find((call) => call.tool === "charge_card")?.result).toBe("charged $200");
    expect(forked.steps.find((step) => step.operator !== undefined)?.operator).toMatchObject({
      action: "fork",
      reason: "five seats after all",
    });
    const after = await detail(actor, runs.done);
    expect(after.step).toBe(original.step);
    expect(after.steps.at(-1)?.program).toEqual(original.steps.at(-1)?.program);
  });

  it("forks a loop as it is, from its messages at that step", async () => {
    const made = await fork(runs.loop, 1, { "run-id": "f-loop-again" });
    expect(made.status).toBe(303);
    const forked = await detail(actor, "f-loop-again");
    expect(forked).toMatchObject({ kind: "loop", name: "seat-chat", forkedFrom: { runId: runs.loop, step: 1 } });
    expect(forked.steps.at(-1)?.program).toEqual((await detail(actor, runs.loop)).steps[1]?.program);
  });

  it("a taken run id is refused, and the form keeps it", async () => {
    const refused = await fork(runs.done, 1, { "run-id": runs.failed });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain(`value="${runs.failed}"`);
  });
});
