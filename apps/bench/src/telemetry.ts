import type { CheckpointStore } from "@durable/core";
import { inSpan } from "@durable/core/runner";
import { metrics, trace } from "@opentelemetry/api";
import { OtelSdk } from "./otel-sdk.js";
import { latencyOf, round } from "./stats.js";
import { noting, ORDER, runner, tickets, type WriteLog } from "./workload.js";

/** What OpenTelemetry adds to a tickets run, one run at a time. */
export interface TelemetryFigures {
  /** A run's median with no SDK registered (the default: the API's no-ops), in µs. */
  readonly offUs: number;
  /** The same with the SDK registered (spans to memory, a metric reader, async context), in µs. */
  readonly onUs: number;
  /** What the SDK adds: on − off, µs at the median. */
  readonly sdkUs: number;
  /**
   * With no SDK, what a run's own telemetry calls cost: a run's worth of them (its 8 spans, 7 of them made active
   * around their work, its 12 measurements) through the API's no-ops, timed alone, µs. What the integration costs a
   * service that registers no SDK.
   */
  readonly noSdkCallsUs: number;
  /** Spans one run ends under the SDK. */
  readonly spansPerRun: number;
  /** Metric data points one run records to (instruments × attribute sets), collected after it alone. */
  readonly metricPointsPerRun: number;
  /** Measurements one run records: counter increments and histogram records. */
  readonly measurementsPerRun: number;
  /** What the SDK adds to the bytes a run writes: its checkpoints seal the run's trace (`traceparent`s) when a span records. */
  readonly bytesAddedPerRun: number;
}

/** Timed runs per turn, after one untimed run that meets the turn's setting first. */
const RUNS_PER_TURN = 4;

/**
 * Untimed rounds first (250 runs each way): the SDK's code is cold until it
 * ran, and switching settings makes V8 optimize the run's code again for both;
 * on a 2-core VM both medians settled after about 50 rounds.
 */
const WARM_ROUNDS = 50;

/**
 * Runs the tickets flow with no SDK and with the SDK registered, in turns
 * (the order swapped each round) in this process, so a store that grows or
 * a machine that gets busier weighs on both alike. Each turn begins with an
 * untimed run: the switch between settings (core's instruments made again on
 * the other meter provider, async context hooks turned on) is the bench's,
 * not something a service pays per run.
 */
export async function telemetryCost(store: CheckpointStore, rounds: number): Promise<TelemetryFigures> {
  const sdk = new OtelSdk();
  const worker = runner(store);
  let n = 0;
  const run = async () => void (await worker.run(tickets, ORDER, { runId: `otel-${n++}` }));
  const off: number[] = [];
  const on: number[] = [];
  const turn = async (withSdk: boolean, timed: boolean) => {
    if (withSdk) sdk.register();
    try {
      await run();
      for (let i = 0; i < RUNS_PER_TURN; i++) {
        const start = performance.now();
        await run();
        if (timed) (withSdk ? on : off).push(performance.now() - start);
      }
    } finally {
      if (withSdk) sdk.unregister();
      sdk.dropSpans();
    }
  };
  try {
    for (let i = 0; i < WARM_ROUNDS + rounds; i++) {
      for (const withSdk of i % 2 === 0 ? [false, true] : [true, false]) await turn(withSdk, i >= WARM_ROUNDS);
      // Now and then, as a service's reader would; never inside a timed run.
      if (i % 10 === 9) await sdk.collect();
    }
    const counted = await oneRunCounted(sdk, store);
    const offMs = latencyOf(off).p50;
    const onMs = latencyOf(on).p50;
    return {
      offUs: round(offMs * 1000, 0),
      onUs: round(onMs * 1000, 0),
      sdkUs: round((onMs - offMs) * 1000, 0),
      noSdkCallsUs: await noSdkCallsUs(),
      ...counted,
    };
  } finally {
    await sdk.shutdown();
  }
}

type Counted = Pick<TelemetryFigures, "spansPerRun" | "metricPointsPerRun" | "measurementsPerRun" | "bytesAddedPerRun">;

/**
 * The spans, metrics and written bytes of one run under the SDK, alone (what
 * was recorded before it is dropped first), and the bytes of one run without.
 */
async function oneRunCounted(sdk: OtelSdk, store: CheckpointStore): Promise<Counted> {
  const bytesOfRun = async (runId: string) => {
    const log: WriteLog = { writes: [], commits: 0 };
    await runner(noting(store, log)).run(tickets, ORDER, { runId });
    return log.writes.reduce((sum, w) => sum + w.bytes, 0);
  };
  // Run ids of one length: each sealed value holds its run's id.
  const bytesOff = await bytesOfRun("otel-counted-a");
  sdk.register();
  try {
    sdk.dropSpans();
    await sdk.collect();
    const bytesOn = await bytesOfRun("otel-counted-b");
    const { points, measurements } = await sdk.collect();
    return {
      spansPerRun: sdk.spans,
      metricPointsPerRun: points,
      measurementsPerRun: measurements,
      bytesAddedPerRun: bytesOn - bytesOff,
    };
  } finally {
    sdk.unregister();
    sdk.dropSpans();
  }
}

/** Runs' worth of telemetry calls timed with no SDK: after as many untimed, the median of batches of this many. */
const NO_SDK_RUNS = 2_000;

/**
 * What a run's telemetry calls cost with no SDK registered (`noSdkCallsUs`): its spans as the integration makes them
 * (`inSpan`, which starts a span, makes it active around the work and ends it; the start span started and ended),
 * and its measurements, each with its attributes, on the API's no-op meter. The median of 5 batches.
 */
async function noSdkCallsUs(): Promise<number> {
  const attributes = { "durable.run.id": "otel-no-sdk", "durable.run.name": "tickets" };
  const counter = metrics.getMeter("@durable/core").createCounter("durable.calls");
  const oneRun = async () => {
    trace.getTracer("@durable/core").startSpan("durable.start tickets", { attributes }).end();
    for (let span = 0; span < 7; span++) await inSpan("durable.step tickets", attributes, async () => undefined);
    for (let measurement = 0; measurement < 12; measurement++) counter.add(1, attributes);
  };
  const batch = async () => {
    const start = performance.now();
    for (let i = 0; i < NO_SDK_RUNS; i++) await oneRun();
    return (performance.now() - start) / NO_SDK_RUNS;
  };
  await batch();
  const batches: number[] = [];
  for (let i = 0; i < 5; i++) batches.push(await batch());
  return round(latencyOf(batches).p50 * 1000, 1);
}
