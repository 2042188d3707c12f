import { MemoryCheckpointStore } from "@durable/core";
import { readLatest, Sealer } from "@durable/core/runner";
import type { CrashPoint } from "@durable/test-utils/stores";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { workflow } from "../src/index.js";
import { KEY, runnerOn } from "./helpers.js";
import { beforeStarted, dies, patchAnswers, toolsOf } from "./patch-fixtures.js";

// Wherever the old code's worker dies (before or after call k's started record, or before the last checkpoint), and
// wherever the new code asks the patch, and whether the new code's worker dies too: the answer is false exactly when
// the old code recorded a call past the patch, it is the same after the second crash, and no call runs twice.

const Empty = z.object({});

describe("ctx.patched wherever a crash falls", () => {
  it("is false exactly when the old code recorded a call past the patch, and no finished call runs twice", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            // The old code's worker dies at call `k`'s started record (k = n: before the run's last checkpoint).
            k: fc.integer({ min: 0, max: n }),
            landed: fc.boolean(),
            // The new code asks the patch before call `at` (at = n: after the last call).
            at: fc.integer({ min: 0, max: n }),
            // The new code's worker may die too, at a call's started record.
            again: fc.option(fc.integer({ min: 0, max: n }), { nil: undefined }),
          }),
        ),
        async ({ n, k, landed, at, again }) => {
          const steps = Array.from({ length: n }, (_, i) => `s${i}`);
          const { registry, ran } = toolsOf([...steps, "fresh"]);
          const oldCode = workflow("steps", { input: Empty }, async (ctx) => {
            for (const step of steps) await ctx.call(step, {});
            return "old code";
          });
          const newCode = workflow("steps", { input: Empty }, async (ctx) => {
            let answer: boolean | undefined;
            for (const [i, step] of [...steps, undefined].entries()) {
              if (i === at) {
                answer = await ctx.patched("fresh-step");
                if (answer) await ctx.call("fresh", {});
              }
              if (step !== undefined) await ctx.call(step, {});
            }
            return String(answer);
          });
          const store = new MemoryCheckpointStore();
          const first: CrashPoint =
            k === n
              ? { op: "save", step: 1, when: "before" }
              : { op: "recordCall", kind: "started", tool: `s${k}`, when: landed ? "after" : "before" };
          expect(await dies(store, registry, first, (r) => r.run(oldCode, {}, { runId: "p" }))).toBe("died");
          // Calls 0..k-1 finished; call k's started record landed too when `landed` (it is in doubt).
          const recorded = k === n ? n : landed ? k + 1 : k;
          const expected = !(recorded > at);

          const recover = (r: ReturnType<typeof runnerOn>) => r.recover(newCode, "p", { rerunInDoubt: true });
          // A second crash at a call the recovery replays never comes: that drive ends the run.
          const ended =
            again !== undefined &&
            (await dies(store, registry, beforeStarted(again === n ? "fresh" : `s${again}`), recover)) === "ended";
          if (!ended) await recover(runnerOn(store, registry));
          const final = await readLatest(store, Sealer.withKeys(KEY), "p");
          expect(final.status).toBe("done");
          expect((final.data as { program: { state: { output: string } } }).program.state.output).toBe(
            String(expected),
          );
          expect(await patchAnswers(store, "p")).toEqual({ "fresh-step": expected });
          for (const step of steps) expect(ran(step), `${step} ran`).toBe(1);
          expect(ran("fresh")).toBe(expected ? 1 : 0);
        },
      ),
      { numRuns: 80 },
    );
  }, 60_000);
});
