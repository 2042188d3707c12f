import { describe, expect, it } from "vitest";
import type { FaultPoint } from "@durable/core/internal";
import { canonicalJson } from "@durable/core/runner";
import { crashAndRecover, expectedOf, problemsOf, type CallCase, type Latencies } from "./flow-call-identity.js";

// The first process: the mail branch is slow and the charge branch fast, so charge is issued before mail.
// 250 ms, not less: on a busy machine a SQLite write of the fast branch can take longer than a short delay.
const SLOW_MAIL: Latencies = { lookup: [250], price: [0], charge: [0], mail: [250, 0] };
// The recovering process: swapped.
const SLOW_CHARGE: Latencies = { lookup: [0], price: [250], charge: [250], mail: [0] };

/**
 * One node: `Promise.all([lookup().then(mail), price().then(charge)])`, then a
 * last mail. The first process dies at the last mail's fifth call, after both
 * branches finished; on recovery the finished calls replay instantly, in
 * another order than they were issued in.
 */
function checkout(point: FaultPoint): CallCase {
  const branches = [
    { kind: "chain", first: { tool: "lookup", n: 1 }, next: "mail" },
    { kind: "chain", first: { tool: "price", n: 2 }, next: "charge" },
  ] as const;
  return {
    layers: [[[branches, [{ kind: "call", call: { tool: "mail", n: 9 } }]]]],
    latencies: [SLOW_MAIL, SLOW_CHARGE],
    kill: { point, hit: 5 },
  };
}

const text = (e: { tool: string; args: unknown }) => `${e.tool} ${canonicalJson(e.args as never)}`;
const LOOKUP = 'lookup {"n":1}';
const PRICE = 'price {"n":2}';
const MAIL = 'mail {"from":{"args":{"n":1},"tool":"lookup"}}';
const CHARGE = 'charge {"from":{"args":{"n":2},"tool":"price"}}';
const LAST_MAIL = 'mail {"n":9}';

describe("calls issued in an order that depends on latency, then a crash", () => {
  it.each([
    ["call.after-started", [LOOKUP, PRICE, CHARGE, MAIL]],
    ["tool.inside", [LOOKUP, PRICE, CHARGE, MAIL, LAST_MAIL]],
  ] as const)(
    "killed at %s of the last call: each finished call replays its own result, nothing runs twice, keys unchanged",
    async (point, ranFirst) => {
      const c = checkout(point);
      const outcome = await crashAndRecover(c);
      expect(outcome.killed).toBe(true);

      const first = outcome.effects.filter((e) => e.pid === outcome.firstPid);
      const second = outcome.effects.filter((e) => e.pid !== outcome.firstPid);
      expect(first.map(text)).toEqual(ranFirst);
      // Only the last mail, the one call in doubt, runs again; under its first run's key when it had one.
      expect(outcome.recovered.inDoubt).toEqual([["mail", "started with no result"]]);
      expect(second.map(text)).toEqual([LAST_MAIL]);
      const lastMailFirstKey = first.find((e) => text(e) === LAST_MAIL)?.key;
      if (lastMailFirstKey !== undefined) expect(second[0]!.key).toBe(lastMailFirstKey);

      expect(outcome.recovered.status).toBe("done");
      expect(outcome.recovered.state.seen.s0n0).toEqual(await expectedOf(c.layers[0]![0]!));
      expect(await problemsOf(c, outcome)).toEqual([]);
    },
  );
});

describe("node code that reads a result's key order, then a crash", () => {
  it("sees the same value before the crash and after it: the charge replays, it does not run for another product", async () => {
    // A tool returns { tool, args }; canonical JSON sorts the keys, so the first key is "args" on every worker.
    const c: CallCase = {
      layers: [[[[{ kind: "firstKey", n: 3 }], [{ kind: "call", call: { tool: "mail", n: 9 } }]]]],
      latencies: [SLOW_MAIL, SLOW_CHARGE],
      // Every call finished; the superstep's checkpoint, and the last mail's `done` that goes with it, were not saved.
      kill: { point: "checkpoint.before-save", hit: 2 },
    };
    const outcome = await crashAndRecover(c);
    expect(outcome.killed).toBe(true);
    const charges = outcome.effects.filter((e) => e.tool === "charge").map(text);
    expect(charges).toEqual(['charge {"product":"args"}']);
    // Only the mail whose record had not landed runs again, reported in doubt.
    expect(outcome.effects.filter((e) => e.pid !== outcome.firstPid).map(text)).toEqual([LAST_MAIL]);
    expect(outcome.recovered.inDoubt).toEqual([["mail", "started with no result"]]);
    expect(outcome.recovered.state.seen.s0n0).toEqual(await expectedOf(c.layers[0]![0]!));
    expect(await problemsOf(c, outcome)).toEqual([]);
  });
});
