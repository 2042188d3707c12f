import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type DataPoint, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";

export { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from "@opentelemetry/sdk-trace-base";

/** A finished span as the trace tests compare them, in this process or read back from a dead worker's file. */
export interface SpanLine {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly links: readonly { readonly traceId: string; readonly spanId: string; readonly attributes: object }[];
  readonly attributes: Readonly<Record<string, unknown>>;
}

export function spanLine(span: ReadableSpan): SpanLine {
  const { traceId, spanId } = span.spanContext();
  return {
    name: span.name,
    traceId,
    spanId,
    parentSpanId: parentOf(span),
    links: span.links.map(({ context: linked, attributes }) => ({
      traceId: linked.traceId,
      spanId: linked.spanId,
      attributes: attributes ?? {},
    })),
    attributes: { ...span.attributes },
  };
}

/** A span's parent span id (SDK 2: `parentSpanContext`). */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Appends each span as it ends, one JSON line each: what a SIGKILLed process had exported survives it. */
class JsonLinesSpans implements SpanProcessor {
  constructor(readonly path: string) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    appendFileSync(this.path, `${JSON.stringify(spanLine(span))}\n`);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** A reader that collects when the test asks. */
class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** A metric's data points as the SDK collected them: each point's attributes and value. */
export type Points = readonly DataPoint<unknown>[];

/**
 * The OpenTelemetry SDK registered globally, as a service registers it:
 * spans to memory (and to `spansFile`, as they end), metrics read on demand,
 * async context across awaits.
 */
export function registerOtel(spansFile?: string) {
  const exporter = new InMemorySpanExporter();
  const spanProcessors: SpanProcessor[] = [new SimpleSpanProcessor(exporter)];
  if (spansFile !== undefined) spanProcessors.push(new JsonLinesSpans(spansFile));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors }));
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

/** The spans a process wrote to `path` before it died. */
export function spansIn(path: string): SpanLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as SpanLine);
}
