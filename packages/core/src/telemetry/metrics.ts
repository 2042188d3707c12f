import { type Attributes, type MeterProvider, metrics, type ObservableGauge } from "@opentelemetry/api";
import { safely } from "./guard.js";
import { TRACER_NAME } from "./tracing.js";

/** A counter, as @durable records to it. */
interface Counter {
  add(value: number, attributes?: Attributes): void;
}

/** A histogram, as @durable records to it. */
interface Histogram {
  record(value: number, attributes?: Attributes): void;
}

/**
 * The instruments @durable records to, on the global meter provider (the
 * user's SDK; a no-op without one). See docs/observability.md for each name,
 * its unit and its attributes.
 */
export interface DurableInstruments {
  /** Runs started (step 0 saved): `durable.run.kind`, `durable.run.name`. */
  readonly runsStarted: Counter;
  /** Claims that landed, by why (`durable.claim`: `recover`, `resume`, `retry`, `wake`, `decision`). */
  readonly runsClaimed: Counter;
  /** Claims of a running run another drive held until it died or gave it up. */
  readonly runsTakenOver: Counter;
  /** Runs that ended, by `durable.run.status`: `done`, `failed`, `cancelled`. */
  readonly runsEnded: Counter;
  /** Tool calls by `durable.call.tool` and `durable.call.outcome`: `done`, `error`, `retrying`, `replayed`, `denied`, `in_doubt`. */
  readonly calls: Counter;
  /** Calls a recovery found in doubt (started, never recorded), by `durable.call.tool`. */
  readonly callsInDoubt: Counter;
  /** Lease renewals of a drive's timer (saves renew a lease too, uncounted). */
  readonly leaseRenewals: Counter;
  /** Drives that lost their run's lease: a takeover, a cancel, a full queue. */
  readonly leaseLosses: Counter;
  /** How long a step (a flow's superstep, a loop's step) ran, in seconds. */
  readonly stepDuration: Histogram;
  /** How long one commit to the store took, in seconds, by `durable.store`. */
  readonly commitDuration: Histogram;
}

/** The attributes every run metric has: the run's kind and name (and `more`). */
export function runMetricAttributes(
  run: { readonly kind: string; readonly name: string },
  more: Attributes = {},
): Attributes {
  return { "durable.run.kind": run.kind, "durable.run.name": run.name, ...more };
}

let cached: { provider: MeterProvider; instruments: DurableInstruments } | undefined;

/** The instruments on the meter provider registered now: made again when another provider was registered since. */
export function instruments(): DurableInstruments {
  const provider = safely(() => metrics.getMeterProvider(), undefined);
  if (cached !== undefined && cached.provider === provider) return cached.instruments;
  const made = safely(() => (provider === undefined ? undefined : madeOn(provider)), undefined) ?? NONE;
  if (provider !== undefined) cached = { provider, instruments: made };
  return made;
}

/** Every instrument on `provider`'s meter, each guarded: an SDK that throws as it records is a warning. */
function madeOn(provider: MeterProvider): DurableInstruments {
  const meter = provider.getMeter(TRACER_NAME);
  const counter = (name: string, description: string): Counter => {
    const made = meter.createCounter(name, { description });
    return { add: (value, attributes) => safely(() => made.add(value, attributes), undefined) };
  };
  const seconds = (name: string, description: string): Histogram => {
    const made = meter.createHistogram(name, { description, unit: "s" });
    return { record: (value, attributes) => safely(() => made.record(value, attributes), undefined) };
  };
  return {
    runsStarted: counter("durable.runs.started", "Runs started (step 0 saved)."),
    runsClaimed: counter("durable.runs.claimed", "Claims of runs that landed, by why."),
    runsTakenOver: counter("durable.runs.taken_over", "Claims of runs another drive held until it died or gave up."),
    runsEnded: counter("durable.runs.ended", "Runs that ended, by status."),
    calls: counter("durable.calls", "Tool call attempts and replays, by tool and outcome."),
    callsInDoubt: counter("durable.calls.in_doubt", "Calls a recovery found in doubt, by tool."),
    leaseRenewals: counter("durable.lease.renewals", "Lease renewals by a drive's timer."),
    leaseLosses: counter("durable.lease.losses", "Drives that lost their run's lease."),
    stepDuration: seconds("durable.step.duration", "How long a step of a run ran."),
    commitDuration: seconds("durable.commit.duration", "How long a commit to the store took."),
  };
}

const NOTHING = { add: () => undefined, record: () => undefined };

/** What records when no meter could be made. */
const NONE: DurableInstruments = {
  runsStarted: NOTHING,
  runsClaimed: NOTHING,
  runsTakenOver: NOTHING,
  runsEnded: NOTHING,
  calls: NOTHING,
  callsInDoubt: NOTHING,
  leaseRenewals: NOTHING,
  leaseLosses: NOTHING,
  stepDuration: NOTHING,
  commitDuration: NOTHING,
};

/**
 * Observes `depth()` (the runs waiting in each queue) as the gauge
 * `durable.queue.depth` with `durable.queue` while the returned stop has not
 * been called. The gauge is read when the user's SDK collects.
 */
export function observeQueueDepth(depth: () => Promise<ReadonlyMap<string, number>>): () => void {
  let last = new Map<string, number>();
  // The SDK's callback must not wait on the store: it reports the last depth read, and reads the next.
  const observe = (result: { observe(value: number, attributes?: Attributes): void }): void => {
    for (const [queue, count] of last) result.observe(count, { "durable.queue": queue });
    void depth().then(
      (read) => {
        last = new Map(read);
      },
      () => undefined,
    );
  };
  const gauge = safely((): ObservableGauge | undefined => {
    const made = metrics.getMeterProvider().getMeter(TRACER_NAME).createObservableGauge("durable.queue.depth", {
      description: "Runs waiting in each queue a worker serves.",
    });
    made.addCallback(observe);
    return made;
  }, undefined);
  return () => safely(() => gauge?.removeCallback(observe), undefined);
}
