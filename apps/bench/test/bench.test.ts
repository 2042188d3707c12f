import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { clusterTestsWanted } from "@durable/test-utils/redis-cluster";
import { measureTickets } from "../src/runs.js";
import { sweep } from "../src/sweeps.js";
import { measureScale } from "../src/scale/measure.js";
import { memoryTarget, sqliteTarget } from "../src/targets.js";

// The bench's measures run end to end on small sizes; the figures themselves are for `pnpm bench`, never asserted here.
describe("the bench, on small sizes", () => {
  it("measures the tickets flow against no store and against raw driver writes", async () => {
    const target = sqliteTarget();
    try {
      const store = await target.store();
      const raw = await target.raw!();
      const figures = await measureTickets(store, raw, 20);
      await raw.close();
      await store.close();
      expect(figures).toMatchObject({
        writesPerRun: 10,
        raw: { ratio: expect.any(Number) },
        lease: { writesPerRun: 0, usPerRun: expect.any(Number) },
        security: {
          encryptionUs: expect.any(Number),
          ed25519Us: expect.any(Number),
          ed25519EncryptedUs: expect.any(Number),
          sqliteAnchorUs: expect.any(Number),
        },
        // The start, the attempt, 3 steps and 3 tool calls; runs started and ended, 3 tools' calls, step and commit durations.
        telemetry: {
          offUs: expect.any(Number),
          onUs: expect.any(Number),
          sdkUs: expect.any(Number),
          noSdkCallsUs: expect.any(Number),
          spansPerRun: 8,
          metricPointsPerRun: 7,
          measurementsPerRun: 12,
          bytesAddedPerRun: expect.any(Number),
        },
      });
      expect(figures.single.runsPerSecond).toBeGreaterThan(0);
      // Checkpoints seal the run's trace only while a span records: with no SDK a run writes no byte for it.
      expect(figures.telemetry.bytesAddedPerRun).toBeGreaterThan(0);
      // The SDK registered for its turns is gone after them: what the bench measures next runs on the API's no-ops.
      expect(trace.getTracer("bench").startSpan("after").isRecording()).toBe(false);
    } finally {
      await target.cleanup();
    }
  }, 60_000);

  it("sweeps state sizes, calls per superstep, log lengths and unfinished runs, recovering every run", async () => {
    const target = memoryTarget();
    const sizes = { stateBytes: [200], callsPerSuperstep: [1, 10], recoveredCalls: [5, 50], unfinishedRuns: [20] };
    const figures = await sweep(() => target.store(), sizes);
    expect(figures.recovery.map((r) => r.records)).toEqual([10, 100]);
    expect(figures.recoverEach).toMatchObject([{ runs: 20 }]);
  }, 60_000);
});

describe("the scale measure, on small sizes", () => {
  // One worker process per curve: each starts through tsx, which takes a busy CI machine many seconds.
  it.skipIf(!clusterTestsWanted())(
    "measures runs/s of a worker process on a Redis and on a Redis Cluster of its own, with and without replicas: 1",
    async () => {
      const { curves, waitCost } = await measureScale([1], 300, () => {}, 100);
      expect(curves.map((curve) => curve.name)).toEqual([
        "redis, one node",
        "redis cluster",
        "redis cluster, replicas: 1",
      ]);
      for (const curve of curves) expect(curve.points[0]?.runsPerSecond).toBeGreaterThan(0);
      expect(waitCost.withReplicasP50Ms).toBeGreaterThan(0);
    },
    300_000,
  );
});
