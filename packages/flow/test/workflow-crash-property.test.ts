import { MemoryCheckpointStore, RecoveryNeedsDecision, sendEvent, ToolRegistry } from "@durable/core";
import { sleep } from "@durable/test-utils/waiting";
import { readLatest, Sealer } from "@durable/core/runner";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { doneCalls, mortal } from "./mortal-store.js";

// A workflow runs again from its top on every wake and recovery. For any script of calls, sleeps and waits (some in
// Promise.all), any order of sends, and workers dying before or after any write: each call of the script runs under
// one call id (its tool never runs again after its `done` record), each wait takes its own event, and the run ends.

type Op = { call: number } | { sleep: number } | { wait: string } | { both: [number, string] };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ call: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ sleep: fc.constantFrom(0, 20) }),
  fc.record({ wait: fc.constantFrom("x", "y") }),
  fc.record({ both: fc.tuple(fc.integer({ min: 0, max: 3 }), fc.constantFrom("x", "y")) }),
);

describe("a workflow with workers dying at any write", () => {
  it("runs each call of its script once, each wait takes its own event, and ends", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 6 }),
        fc.array(
          fc.oneof(
            fc.record({ send: fc.constantFrom("x", "y") }),
            fc.record({ crashAt: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }), after: fc.boolean() }),
          ),
          { maxLength: 10 },
        ),
        async (script, actions) => {
          const inner = new MemoryCheckpointStore();
          const violations: string[] = [];
          /** Script position → the idempotency keys its tool ran under. */
          const ran = new Map<number, Set<string>>();
          const registry = new ToolRegistry().tool(
            "effect",
            async (args: { at: number; note: string }, ctx) => {
              if ((await doneCalls(inner, ctx.runId)).has(ctx.callId)) violations.push(`${ctx.callId} ran after done`);
              ran.set(args.at, (ran.get(args.at) ?? new Set()).add(ctx.idempotencyKey));
              return args.at;
            },
            { idempotent: true },
          );
          const flow = workflow("script", { input: z.object({}) }, async (ctx) => {
            const notes: string[] = [];
            for (const [at, step] of script.entries()) {
              if ("call" in step) notes.push(String(await ctx.call("effect", { at, note: `n${step.call}` })));
              else if ("sleep" in step) await ctx.sleep(step.sleep);
              else if ("wait" in step) {
                const got = await ctx.waitForEvent(step.wait);
                notes.push(got.status === "received" ? String(got.payload) : "timeout");
              } else {
                const [n, name] = step.both;
                const [value, got] = await Promise.all([
                  ctx.call("effect", { at, note: `n${n}` }),
                  ctx.waitForEvent(name),
                ]);
                notes.push(String(value), got.status === "received" ? String(got.payload) : "timeout");
              }
            }
            return notes.join(",");
          });
          let sentCount = 0;
          const send = async (name: string) => {
            sentCount += 1;
            await sendEvent({
              checkpoints: inner,
              checkpointKey: KEY,
              runId: "w",
              name,
              payload: `${name}${sentCount}`,
            }).catch(() => undefined);
          };
          const drive = async (crashAt: number | undefined, after: boolean) => {
            const status = (await inner.latest("w").catch(() => undefined))?.status;
            if (status === "done" || status === "failed") return;
            const { store, state } = mortal(inner, crashAt, after);
            const runner = runnerOn(store, registry);
            const going =
              status === undefined
                ? runner.run(flow, {}, { runId: "w" })
                : runner.recover(flow, "w", { takeOver: true, rerunInDoubt: true });
            let settled = false;
            const ended = going.then(
              (result) => result,
              (error: unknown) => {
                if (!(error instanceof RecoveryNeedsDecision)) throw error;
              },
            );
            void ended.then(
              () => {
                settled = true;
              },
              () => {
                settled = true;
              },
            );
            while (!settled && !state.dead) await new Promise((resolve) => setTimeout(resolve, 1));
            if (settled) {
              const result = (await ended) as { status?: string; until?: number } | undefined;
              if (result?.status === "asleep" && result.until !== undefined)
                await sleep(Math.min(50, Math.max(0, result.until - Date.now())));
            }
          };

          await drive(undefined, false);
          for (const action of actions) {
            if ("send" in action) await send(action.send);
            else await drive(action.crashAt, action.after);
          }
          for (let i = 0; i < 12; i++) await send(i % 2 === 0 ? "x" : "y");
          for (let i = 0; i < 12 && (await inner.latest("w").catch(() => undefined))?.status !== "done"; i++)
            await drive(undefined, false);

          expect(violations).toEqual([]);
          expect((await inner.latest("w")).status).toBe("done");
          for (const [at, keys] of ran) expect(keys.size, `script step ${at} ran under ${keys.size} calls`).toBe(1);
          const final = await readLatest(inner, Sealer.withKeys(KEY), "w");
          const output = (final.data as { program: { state: { output: string } } }).program.state.output;
          const payloads = output.split(",").filter((note) => /^[xy]\d+$/.test(note));
          expect(new Set(payloads).size, `events taken: ${output}`).toBe(payloads.length);
          const calls = script.flatMap((step, at) => ("call" in step || "both" in step ? [at] : []));
          expect([...ran.keys()].sort()).toEqual(calls.sort());
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
