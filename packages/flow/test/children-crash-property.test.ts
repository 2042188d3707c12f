import { MemoryCheckpointStore, RecoveryNeedsDecision, ToolRegistry } from "@durable/core";
import { readLatest, Sealer } from "@durable/core/runner";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { doneCalls, mortal } from "./mortal-store.js";

// A parent fanning out to child runs (two with equal inputs among them, in Promise.all), with the worker of the
// parent or of a child dying before or after any write of its drive, in any order: each child run is started once,
// each child's tool runs once for its call (never again after its `done` record), and the parent ends with every
// child's output. The verdict is the tool's own count and the store's list of runs.

/** A worker's view of `inner` that dies at its `crashAt`-th write (before or after it lands): then every call hangs. */

const Sum = z.object({ sources: z.array(z.string()), total: z.number().default(0) });

describe("child runs with workers dying at any write", () => {
  it("each child starts once, its tool runs once, and the parent gets every output", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("a", "bb", "ccc"), { minLength: 1, maxLength: 3 }),
        fc.array(
          fc.record({
            who: fc.constantFrom("parent", "children"),
            crashAt: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
            after: fc.boolean(),
          }),
          { maxLength: 10 },
        ),
        async (sources, drives) => {
          const inner = new MemoryCheckpointStore();
          const violations: string[] = [];
          const fetched = new Map<string, Set<string>>();
          const registry = new ToolRegistry().tool(
            "fetch",
            async (args: { source: string }, ctx) => {
              if ((await doneCalls(inner, ctx.runId)).has(ctx.callId))
                violations.push(`${ctx.runId} ${ctx.callId} ran again after its done record`);
              fetched.set(ctx.runId, (fetched.get(ctx.runId) ?? new Set()).add(ctx.idempotencyKey));
              return args.source.length;
            },
            { idempotent: true },
          );
          const child = workflow("child", { input: z.object({ source: z.string() }) }, async (ctx, { source }) =>
            ctx.call<number>("fetch", { source }),
          );
          const parent = new Flow("parent", { state: Sum })
            .node("fan", async ({ sources }, ctx) => {
              const outs = await Promise.all(sources.map((source) => ctx.startChild(child, { source })));
              return { total: outs.reduce((sum, n) => sum + n, 0) };
            })
            .end("fan");

          /** One worker of `flow` on `runId`: drives it until it settles or dies. */
          const drive = async (flow: Flow<never>, runId: string, crashAt: number | undefined, after: boolean) => {
            const status = (await inner.latest(runId).catch(() => undefined))?.status;
            if (status === "done" || status === "failed") return;
            const { store, state } = mortal(inner, crashAt, after);
            const runner = runnerOn(store, registry);
            const going =
              status === undefined
                ? runner.run(flow, { sources }, { runId })
                : runner.recover(flow, runId, { takeOver: true, rerunInDoubt: true });
            let settled = false;
            const ended = going.then(
              () => undefined,
              (error: unknown) => {
                if (!(error instanceof RecoveryNeedsDecision)) return error;
              },
            );
            void ended.then(() => {
              settled = true;
            });
            while (!settled && !state.dead) await new Promise((resolve) => setTimeout(resolve, 1));
            if (settled) {
              const error = await ended;
              // A lost race with a dead worker's claim or a run asleep are not errors of the run.
              if (error !== undefined && !/CheckpointConflict|LeaseHeld/.test(String((error as Error).name)))
                throw error;
            }
          };
          const childIds = async () =>
            (await inner.listRuns({ runIdPrefix: "p." })).runs.map((run) => run.runId).sort();

          // The parent's first worker may die too, before its step 0 landed: then the run is started again.
          const [first] = drives;
          await drive(parent as never, "p", first?.who === "parent" ? first.crashAt : undefined, first?.after ?? false);
          for (const { who, crashAt, after } of drives.slice(first?.who === "parent" ? 1 : 0)) {
            if (who === "parent") await drive(parent as never, "p", crashAt, after);
            else for (const id of await childIds()) await drive(child as never, id, crashAt, after);
          }
          for (let i = 0; i < 4; i++) {
            for (const id of await childIds()) await drive(child as never, id, undefined, false);
            await drive(parent as never, "p", undefined, false);
          }

          expect(violations).toEqual([]);
          const ids = await childIds();
          expect(ids).toHaveLength(sources.length);
          for (const id of ids) expect(fetched.get(id)?.size ?? 0, `${id} fetched under one call`).toBe(1);
          const done = await inner.latest("p");
          expect(done.status).toBe("done");
          const total = sources.reduce((sum, source) => sum + source.length, 0);
          const final = await readLatest(inner, Sealer.withKeys(KEY), "p");
          expect((final.data as { program: { state: { total: number } } }).program.state.total).toBe(total);
          expect(fetched.size).toBe(sources.length);
        },
      ),
      { numRuns: 120 },
    );
  }, 120_000);
});
