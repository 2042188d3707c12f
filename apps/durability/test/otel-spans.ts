import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";

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
    parentSpanId: span.parentSpanContext?.spanId,
    links: span.links.map(({ context: linked, attributes }) => ({
      traceId: linked.traceId,
      spanId: linked.spanId,
      attributes: attributes ?? {},
    })),
    attributes: { ...span.attributes },
  };
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

/**
 * The OpenTelemetry SDK registered globally, as a service registers it: spans
 * to memory (and to `spansFile`, as they end), async context across awaits.
 */
export function registerOtel(spansFile?: string) {
  const exporter = new InMemorySpanExporter();
  const spanProcessors: SpanProcessor[] = [new SimpleSpanProcessor(exporter)];
  if (spansFile !== undefined) spanProcessors.push(new JsonLinesSpans(spansFile));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors }));
  return {
    spans: (): SpanLine[] => exporter.getFinishedSpans().map(spanLine),
    dispose(): void {
      trace.disable();
      context.disable();
    },
  };
}

/** The spans a process wrote to `path` before it died. */
export function spansIn(path: string): SpanLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as SpanLine);
}
