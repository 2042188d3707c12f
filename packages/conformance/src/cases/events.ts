import { CheckpointConflict, CheckpointNotFound, InvalidInput, RunAlreadyEnded } from "@durable/core";
import { sealEvent } from "@durable/core/runner";
import { ASLEEP, type CheckpointStore, WAITING } from "@durable/core/store";
import { expect } from "vitest";
import type { Harness } from "../harness/harness.js";
import type { ConformanceCase, ConformanceGroup } from "./case.js";
import { claim, leaseHeldBy, listedClaimable, LONG_MS, OWNER_A } from "./lease-checks.js";
import { breaks, expectRejects, expectResolves } from "./rule.js";

/** A store with the events capability: `sendEvent` and `inbox` are then known to be there. */
type Delivering = CheckpointStore & Required<Pick<CheckpointStore, "sendEvent" | "inbox">>;

const eventRule = (operation: string, expected: string): string => breaks("events", operation, expected);

/** How many senders race. */
const SENDERS = 8;

function delivering(h: Harness): Delivering {
  return h.store as Delivering;
}

/** Event `seq` of the run under `key`, sealed as `sendEvent` seals it. */
function event(h: Harness, runId: string, seq: number, key: string): { seq: number; key: string; sealed: string } {
  const sealed = sealEvent(h.sealer, runId, {
    seq,
    key,
    name: "paid",
    payload: { key },
    at: new Date(0).toISOString(),
  });
  return { seq, key, sealed };
}

/** The keys of the run's inbox, by seq, as `inbox` gives them. */
async function inboxKeys(h: Harness, runId: string, from?: number): Promise<string[]> {
  const rows = await delivering(h).inbox(runId, from);
  return rows.map((row) => row.key);
}

/** A run held by worker A (step 0, segment 0, a long lease): what a sender finds while the run works. */
async function working(h: Harness, flow: string): Promise<string> {
  const runId = h.runId("inbox");
  await h.store.save(runId, 0, h.row(runId, 0, { name: flow }), { owner: OWNER_A, ms: LONG_MS });
  return runId;
}

/** A run saved waiting for an event, as a worker saves it: step 1 hands the lease to `WAITING`, having seen `seen` events. */
async function waiting(h: Harness, flow: string, runId: string, seen: number): Promise<void> {
  await h.store.save(runId, 1, h.row(runId, 1, { name: flow }), { owner: WAITING, ms: LONG_MS, events: seen });
}

const appendCase: ConformanceCase = {
  name: "sendEvent appends events numbered 0, 1, 2, … under their keys, and inbox gives them back by seq, from any place",
  async run(h) {
    const runId = await working(h, h.runId("events"));
    const store = delivering(h);
    for (const [seq, key] of ["a", "b", "c"].entries())
      expect(
        await expectResolves(
          eventRule(`sendEvent(runId, { seq: ${seq} })`, "true"),
          store.sendEvent(runId, event(h, runId, seq, key)),
        ),
        eventRule(`sendEvent(runId, { seq: ${seq}, key: ${key} })`, "true: the event was appended"),
      ).toBe(true);
    const rows = await store.inbox(runId);
    expect(
      rows.map(({ runId: id, seq, key, sealed }) => ({ id, seq, key, sealed })),
      eventRule("inbox(runId) after three events", "the three events, by seq, as sent"),
    ).toEqual(["a", "b", "c"].map((key, seq) => ({ id: runId, seq, key, sealed: event(h, runId, seq, key).sealed })));
    expect(await inboxKeys(h, runId, 1), eventRule("inbox(runId, 1)", "events 1 and 2")).toEqual(["b", "c"]);
    expect(await inboxKeys(h, h.runId("unknown")), eventRule("inbox(unknown run)", "no event")).toEqual([]);
    for (const from of [-1, 0.5])
      await expectRejects(InvalidInput, eventRule(`inbox(runId, ${from})`, "InvalidInput"), store.inbox(runId, from));
  },
};

const refusalCase: ConformanceCase = {
  name: "sendEvent refuses an unknown run, an ended run, a seq out of place and a malformed event, writing nothing",
  async run(h) {
    const flow = h.runId("events");
    const store = delivering(h);
    const unknown = h.runId("unknown");
    await expectRejects(
      CheckpointNotFound,
      eventRule("sendEvent(unknown run)", "CheckpointNotFound"),
      store.sendEvent(unknown, event(h, unknown, 0, "a")),
    );
    const runId = await working(h, flow);
    await store.sendEvent(runId, event(h, runId, 0, "a"));
    for (const seq of [0, 2])
      await expectRejects(
        CheckpointConflict,
        eventRule(`sendEvent(runId, { seq: ${seq} }) over an inbox of 1`, "CheckpointConflict"),
        store.sendEvent(runId, event(h, runId, seq, `out-of-place-${seq}`)),
      );
    const malformed = [
      { seq: -1, key: "k", sealed: "x" },
      { seq: 1.5, key: "k", sealed: "x" },
      { seq: 1, key: "", sealed: "x" },
      { seq: 1, key: "k".repeat(201), sealed: "x" },
      { seq: 1, key: "k", sealed: 7 },
    ];
    for (const bad of malformed)
      await expectRejects(
        InvalidInput,
        eventRule(`sendEvent(runId, ${JSON.stringify(bad)})`, "InvalidInput"),
        store.sendEvent(runId, bad as never),
      );
    for (const status of ["done", "failed"] as const) {
      const ended = await working(h, flow);
      await h.store.save(ended, 1, h.row(ended, 1, { name: flow, status }));
      const error = await expectRejects(
        RunAlreadyEnded,
        eventRule(`sendEvent to a ${status} run`, "RunAlreadyEnded"),
        store.sendEvent(ended, event(h, ended, 0, "late")),
      );
      expect(error.status, eventRule(`sendEvent to a ${status} run`, `RunAlreadyEnded naming ${status}`)).toBe(status);
      expect(
        await inboxKeys(h, ended),
        eventRule(`inbox of a ${status} run after a refused event`, "no event"),
      ).toEqual([]);
    }
    expect(await inboxKeys(h, runId), eventRule("inbox(runId) after the refused events", "only event a")).toEqual([
      "a",
    ]);
  },
};

const resendCase: ConformanceCase = {
  name: "a resend under a key the inbox holds resolves false and writes nothing, at any seq and also once the run ended",
  async run(h) {
    const flow = h.runId("events");
    const store = delivering(h);
    const runId = await working(h, flow);
    await store.sendEvent(runId, event(h, runId, 0, "a"));
    await store.sendEvent(runId, event(h, runId, 1, "b"));
    for (const seq of [0, 1, 2])
      expect(
        await store.sendEvent(runId, event(h, runId, seq, "a")),
        eventRule(`sendEvent(runId, { seq: ${seq}, key: a }) with a in the inbox`, "false: a resend"),
      ).toBe(false);
    await h.store.save(runId, 1, h.row(runId, 1, { name: flow, status: "done" }));
    expect(
      await store.sendEvent(runId, event(h, runId, 2, "b")),
      eventRule("sendEvent(runId, { key: b }) once the run is done", "false: a resend is a no-op, not RunAlreadyEnded"),
    ).toBe(false);
    expect(await inboxKeys(h, runId), eventRule("inbox(runId) after the resends", "events a and b once each")).toEqual([
      "a",
      "b",
    ]);
  },
};

const raceCase: ConformanceCase = {
  name: "racing senders: of events sent at one place exactly one lands; sending again where the inbox ends, every event lands once with no gap; of resends of one key exactly one lands",
  timeout: 30_000,
  async run(h) {
    const flow = h.runId("events");
    const runId = await working(h, flow);
    const stores = [h.store, ...(await Promise.all([1, 2, 3].map(() => h.connect().catch(() => h.store))))];
    const senders = Array.from({ length: SENDERS }, (_, i) => stores[i % stores.length] as Delivering);
    const first = await Promise.allSettled(senders.map((s, i) => s.sendEvent(runId, event(h, runId, 0, `racer-${i}`))));
    expect(
      first.filter((outcome) => outcome.status === "fulfilled" && outcome.value === true),
      eventRule(`${SENDERS} racing sendEvent(runId, { seq: 0 }) with their own keys`, "exactly one accepted"),
    ).toHaveLength(1);
    for (const outcome of first)
      if (outcome.status === "rejected")
        expect(outcome.reason, eventRule("a racing sendEvent that lost", "CheckpointConflict")).toBeInstanceOf(
          CheckpointConflict,
        );
    // Each sender goes on as `sendEvent` does: read where the inbox ends, append there, again when beaten.
    await Promise.all(
      senders.map(async (s, i) => {
        for (;;) {
          const seq = (await s.inbox(runId)).length;
          try {
            await s.sendEvent(runId, event(h, runId, seq, `racer-${i}`));
            return;
          } catch (error) {
            if (!(error instanceof CheckpointConflict)) throw error;
          }
        }
      }),
    );
    const rows = await delivering(h).inbox(runId);
    expect(
      rows.map((row) => row.seq),
      eventRule("inbox(runId) after the race", "seq 0 … 7, no gap"),
    ).toEqual(Array.from({ length: SENDERS }, (_, i) => i));
    expect(
      rows.map((row) => row.key).sort(),
      eventRule("inbox(runId) after the race", "each racer's event once"),
    ).toEqual(Array.from({ length: SENDERS }, (_, i) => `racer-${i}`).sort());

    const again = await Promise.allSettled(senders.map((s) => s.sendEvent(runId, event(h, runId, SENDERS, "same"))));
    expect(
      again.filter((outcome) => outcome.status === "fulfilled" && outcome.value === true),
      eventRule(`${SENDERS} racing sendEvent of one key`, "exactly one accepted"),
    ).toHaveLength(1);
    expect(
      (await inboxKeys(h, runId)).filter((key) => key === "same"),
      eventRule("inbox after them", "the key once"),
    ).toHaveLength(1);
  },
};

const wakeCase: ConformanceCase = {
  name: "an event releases the lease of a run waiting for one (WAITING), and no other lease: not a sleep's (ASLEEP), not a worker's",
  async run(h) {
    const flow = h.runId("events");
    const store = delivering(h);
    const waiter = await working(h, flow);
    await waiting(h, flow, waiter, 0);
    await leaseHeldBy(h, waiter, WAITING, "a save for WAITING that saw every event");
    expect(
      await listedClaimable(h, flow, waiter),
      eventRule("listUnfinished(flow, { claimable: true }) while the run waits", "not the run"),
    ).toBe(false);
    await store.sendEvent(waiter, event(h, waiter, 0, "paid"));
    expect(
      await h.store.leaseOf(waiter),
      eventRule("leaseOf(runId) after an event was sent to the waiting run", "undefined: released"),
    ).toBeUndefined();
    expect(
      await listedClaimable(h, flow, waiter),
      eventRule("listUnfinished(flow, { claimable: true }) after the event", "the run"),
    ).toBe(true);
    await expectResolves(
      eventRule("a claim of the run the event woke", "accepted"),
      claim(h, waiter, 2, 1, { owner: "worker-b", ms: LONG_MS }, { name: flow }),
    );

    const sleeper = await working(h, flow);
    await h.store.save(sleeper, 1, h.row(sleeper, 1, { name: flow }), { owner: ASLEEP, ms: LONG_MS });
    await store.sendEvent(sleeper, event(h, sleeper, 0, "paid"));
    await leaseHeldBy(h, sleeper, ASLEEP, "an event sent to a run asleep (ASLEEP)");

    const worked = await working(h, flow);
    await store.sendEvent(worked, event(h, worked, 0, "paid"));
    await leaseHeldBy(h, worked, OWNER_A, "an event sent to a run a worker holds");
  },
};

const missedCase: ConformanceCase = {
  name: "a save for WAITING that saw fewer events than the inbox holds takes no lease: the run is claimable at once (save and commit, an event sent by another client too)",
  async run(h) {
    const flow = h.runId("events");
    const store = delivering(h);
    const late = await working(h, flow);
    await store.sendEvent(late, event(h, late, 0, "paid"));
    await waiting(h, flow, late, 0);
    expect(
      await h.store.leaseOf(late),
      eventRule("save for WAITING with events: 0 over an inbox of 1", "no lease: the run is claimable at once"),
    ).toBeUndefined();
    expect(
      await listedClaimable(h, flow, late),
      eventRule("listUnfinished(flow, { claimable: true })", "the run"),
    ).toBe(true);

    const seen = await working(h, flow);
    await store.sendEvent(seen, event(h, seen, 0, "paid"));
    await waiting(h, flow, seen, 1);
    await leaseHeldBy(h, seen, WAITING, "a save for WAITING with events: 1 over an inbox of 1");

    // Sent by another client of the store's data: a store that remembers the run's head must not trust its copy.
    if (h.init.capabilities?.connect !== undefined) {
      const other = (await h.connect()) as Delivering;
      const elsewhere = await working(h, flow);
      await other.sendEvent(elsewhere, event(h, elsewhere, 0, "paid"));
      await waiting(h, flow, elsewhere, 0);
      expect(
        await h.store.leaseOf(elsewhere),
        eventRule("save for WAITING with events: 0 after another client sent an event", "no lease"),
      ).toBeUndefined();
    }

    if (h.store.commit === undefined) return;
    const batched = await working(h, flow);
    await store.sendEvent(batched, event(h, batched, 0, "paid"));
    const row = h.row(batched, 1, { name: flow });
    await h.store.commit(batched, [{ kind: "save", step: 1, row, lease: { owner: WAITING, ms: LONG_MS, events: 0 } }]);
    expect(
      await h.store.leaseOf(batched),
      eventRule("commit of a save for WAITING with events: 0 over an inbox of 1", "no lease"),
    ).toBeUndefined();
  },
};

const deleteCase: ConformanceCase = {
  name: "delete removes a run's inbox with it, and no other run's: a run started again under its id starts with an empty inbox",
  async run(h) {
    const flow = h.runId("events");
    const store = delivering(h);
    const gone = await working(h, flow);
    const kept = await working(h, flow);
    await store.sendEvent(gone, event(h, gone, 0, "a"));
    await store.sendEvent(kept, event(h, kept, 0, "a"));
    await h.store.delete(gone);
    expect(await inboxKeys(h, gone), eventRule("inbox(runId) after delete(runId)", "no event")).toEqual([]);
    expect(await inboxKeys(h, kept), eventRule("inbox of another run after delete(runId)", "its event")).toEqual(["a"]);
    await h.store.save(gone, 0, h.row(gone, 0, { name: flow }));
    expect(
      await store.sendEvent(gone, event(h, gone, 0, "a")),
      eventRule("sendEvent(runId, { seq: 0, key: a }) to a run started again", "true: its inbox starts empty"),
    ).toBe(true);
  },
};

export const eventsGroup: ConformanceGroup = {
  name: "events",
  proves:
    "a store with the events capability keeps each run's inbox numbered with no gap, each key once, refuses events to ended runs, and wakes a run waiting for an event without ever missing one",
  skipFor: (store) =>
    store.sendEvent === undefined || store.inbox === undefined
      ? "the store has no events capability (`sendEvent` and `inbox`)"
      : undefined,
  cases: [appendCase, refusalCase, resendCase, raceCase, wakeCase, missedCase, deleteCase],
};
