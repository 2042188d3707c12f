import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type DataPoint, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

/** A reader that collects when the test asks. */
class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** A metric's data points as the SDK collected them: each point's attributes and value. */
export type Points = readonly DataPoint<unknown>[];

/**
 * The OpenTelemetry SDK registered globally, as a service would: spans to
 * memory, metrics read on demand, async context across awaits.
 */
export function registerOtel() {
  const exporter = new InMemorySpanExporter();
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const reader = new TestReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  return {
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    /** Every metric collected now, by name. */
    async metrics(): Promise<Map<string, Points>> {
      const { resourceMetrics } = await reader.collect();
      const byName = new Map<string, Points>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints);
      return byName;
    },
    dispose(): void {
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

/** The sum of a counter's points whose attributes include `where`. */
export function sumOf(points: Points | undefined, where: Record<string, unknown> = {}): number {
  let sum = 0;
  for (const point of points ?? [])
    if (Object.entries(where).every(([key, value]) => point.attributes[key] === value)) sum += point.value as number;
  return sum;
}

/** A span's parent span id (SDK 2: `parentSpanContext`). */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
