import { MemoryCheckpointStore, RecoveryNeedsDecision, sendEvent, ToolRegistry } from "@durable/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type EventWait, Flow, type NodeContext } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { doneCalls, mortal } from "./mortal-store.js";

// For any order of sends (resends among them) and of workers that die before or after any write, with parallel
// nodes waiting for the same name across rounds (names that are Object.prototype's own among them), each event is
// handled by one call at most, those of a name handled are its first ones sent, a tool whose call has its `done`
// record stored never runs again, and once enough events came the run ends. The verdict is the tool's own count.

const NAMES = ["job", "__proto__", "constructor"] as const;

/** A worker's view of `inner` that dies at its `crashAt`-th write (before or after it lands): then every call hangs. */

/** The raw `done` records of a run, by call id: what a store holds, read under the runner. */

const State = z.object({ a: z.number().default(0), b: z.number().default(0) });

describe("events with workers dying at any write", () => {
  it("each event is handled once at most, in the order sent, and no finished call runs again", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...NAMES),
        fc.constantFrom(...NAMES),
        fc.integer({ min: 1, max: 2 }),
        fc.integer({ min: 1, max: 2 }),
        fc.array(
          fc.oneof(
            fc.record({ send: fc.constantFrom(...NAMES), key: fc.integer({ min: 0, max: 6 }) }),
            fc.record({ crashAt: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }), after: fc.boolean() }),
          ),
          { maxLength: 14 },
        ),
        async (nameA, nameB, loopsA, loopsB, actions) => {
          const inner = new MemoryCheckpointStore();
          const handled: { key: string; payload: string; name: string }[] = [];
          const violations: string[] = [];
          const registry = new ToolRegistry().tool(
            "handle",
            async (args: { name: string; payload: string }, ctx) => {
              if ((await doneCalls(inner, ctx.runId)).has(ctx.callId))
                violations.push(`${ctx.callId} ran again after its done record`);
              handled.push({ key: ctx.idempotencyKey, payload: args.payload, name: args.name });
              return args.payload;
            },
            { idempotent: true },
          );
          const waitAndHandle = async (ctx: NodeContext, name: string) => {
            const got = (await ctx.waitForEvent(name)) as Extract<EventWait, { status: "received" }>;
            await ctx.call("handle", { name, payload: String(got.payload) });
          };
          const flow = new Flow("jobs", { state: State })
            .node("start", () => ({}))
            .node("A", async (s, ctx) => {
              await waitAndHandle(ctx, nameA);
              return { a: s.a + 1 };
            })
            .node("B", async (s, ctx) => {
              // Two waits at once in one node, then one more: parallel and sequential takes of one name.
              await Promise.all([waitAndHandle(ctx as never, nameB), waitAndHandle(ctx as never, nameB)]);
              return { b: s.b + 1 };
            })
            .edge("start", ["A", "B"])
            .edge("A", (s) => (s.a < loopsA ? "A" : []))
            .edge("B", (s) => (s.b < loopsB ? "B" : []));

          const sent = new Map<string, string[]>(NAMES.map((name) => [name, []]));
          const send = async (name: string, key: string) => {
            try {
              const out = await sendEvent({
                checkpoints: inner,
                checkpointKey: KEY,
                runId: "r",
                name,
                payload: key,
                idempotencyKey: key,
              });
              if (out.status === "sent") sent.get(name)?.push(key);
            } catch {
              // The run ended: refused.
            }
          };
          /** One worker: drives the run until it settles or dies. */
          const drive = async (crashAt: number | undefined, after: boolean, start = false) => {
            const { store, state } = mortal(inner, crashAt, after);
            const runner = runnerOn(store, registry);
            const status = (await inner.latest("r").catch(() => undefined))?.status;
            if (!start && (status === undefined || status === "done" || status === "failed")) return;
            const going = start
              ? runner.run(flow, {}, { runId: "r" })
              : runner.recover(flow, "r", { takeOver: true, rerunInDoubt: true });
            let dead = false;
            const died = new Promise<void>((resolve) => {
              const timer = setInterval(() => {
                if (state.dead) {
                  dead = true;
                  clearInterval(timer);
                  resolve();
                }
              }, 1);
              void going
                .finally(() => {
                  clearInterval(timer);
                  resolve();
                })
                .catch(() => undefined);
            });
            await died;
            if (!dead)
              await going.catch((error) => {
                if (!(error instanceof RecoveryNeedsDecision)) throw error;
              });
          };

          await drive(undefined, false, true);
          for (const action of actions) {
            if ("send" in action) await send(action.send, `${action.send}-${action.key}`);
            else await drive(action.crashAt, action.after);
          }
          // Enough events of every name, then workers that do not die.
          for (const name of NAMES) for (let i = 0; i < 8; i++) await send(name, `${name}-late-${i}`);
          for (let i = 0; i < 6; i++) await drive(undefined, false);

          expect(violations).toEqual([]);
          expect((await inner.latest("r")).status).toBe("done");
          // Each event handled by one call at most (one idempotency key per payload).
          const keysOf = new Map<string, Set<string>>();
          for (const h of handled) keysOf.set(h.payload, (keysOf.get(h.payload) ?? new Set()).add(h.key));
          for (const [payload, keys] of keysOf)
            expect(keys.size, `event ${payload} handled by ${keys.size} calls`).toBe(1);
          // Those of a name handled are its first ones sent.
          for (const name of NAMES) {
            const took = [...keysOf.keys()].filter(
              (payload) => handled.find((h) => h.payload === payload)?.name === name,
            );
            const first = sent.get(name)?.slice(0, took.length) ?? [];
            expect(new Set(took)).toEqual(new Set(first));
          }
          const needs = new Map<string, number>();
          needs.set(nameA, loopsA);
          needs.set(nameB, (needs.get(nameB) ?? 0) + 2 * loopsB);
          for (const [name, count] of needs)
            expect(new Set(handled.filter((h) => h.name === name).map((h) => h.payload)).size).toBe(count);
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);
});
