import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  AggregationTemporality,
  type DataPoint,
  DataPointType,
  type Histogram,
  MeterProvider,
  MetricReader,
} from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * A reader the bench collects when it chooses (a service's periodic reader,
 * without its timer). Delta: each collection holds what was recorded since
 * the one before, so one run's metric points can be counted.
 */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** What one collection of the metrics holds. */
export interface Collected {
  /** Data points: one per instrument and set of attributes recorded to. */
  readonly points: number;
  /** Measurements: counter increments (each `add` of the run adds 1) and histogram records. */
  readonly measurements: number;
}

/**
 * The OpenTelemetry SDK as a service sets it up (spans exported to memory,
 * metrics read by a reader, async context across awaits), which the bench
 * registers globally for a turn and unregisters after it.
 */
export class OtelSdk {
  readonly #exporter = new InMemorySpanExporter();
  readonly #tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.#exporter)] });
  readonly #reader = new OnDemandReader();
  readonly #meterProvider = new MeterProvider({ readers: [this.#reader] });
  readonly #contextManager = new AsyncLocalStorageContextManager();

  /** Registers the SDK globally; throws if another provider is registered (the figures would not be ours). */
  register(): void {
    const registered = [
      context.setGlobalContextManager(this.#contextManager.enable()),
      trace.setGlobalTracerProvider(this.#tracerProvider),
      metrics.setGlobalMeterProvider(this.#meterProvider),
    ];
    if (registered.includes(false)) {
      this.unregister();
      throw new Error("an OpenTelemetry SDK was registered already");
    }
  }

  /** Back to the API's no-ops. The context manager is disabled with it (`register` enables it again). */
  unregister(): void {
    trace.disable();
    metrics.disable();
    context.disable();
  }

  /** The spans ended since the last `dropSpans`. */
  get spans(): number {
    return this.#exporter.getFinishedSpans().length;
  }

  /** Empties the exporter, so memory does not grow over the turns. */
  dropSpans(): void {
    this.#exporter.reset();
  }

  /** Collects what was recorded since the last collection. */
  async collect(): Promise<Collected> {
    const { resourceMetrics, errors } = await this.#reader.collect();
    if (errors.length > 0) throw new AggregateError(errors, "collecting the metrics failed");
    let points = 0;
    let measurements = 0;
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics)
        for (const point of metric.dataPoints as DataPoint<unknown>[]) {
          points += 1;
          if (metric.dataPointType === DataPointType.SUM) measurements += point.value as number;
          else if (metric.dataPointType === DataPointType.HISTOGRAM) measurements += (point.value as Histogram).count;
        }
    return { points, measurements };
  }

  async shutdown(): Promise<void> {
    await this.#tracerProvider.shutdown();
    await this.#meterProvider.shutdown();
  }
}
