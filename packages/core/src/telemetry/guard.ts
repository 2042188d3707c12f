import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  type SpanStatus,
  type TimeInput,
  trace,
} from "@opentelemetry/api";

// The user's OpenTelemetry SDK is a dependency a run must not depend on: a span processor, exporter, context
// manager or metric reader that throws is a process warning (once), never a failed step, a call left in doubt or a
// tool run twice.

let warned = false;

/** Runs `work`; a throw is a warning, and `fallback` the result. */
export function safely<T>(work: () => T, fallback: T): T {
  try {
    return work();
  } catch (error) {
    if (!warned) {
      warned = true;
      process.emitWarning(`@durable: OpenTelemetry failed (runs go on without it): ${String(error)}`);
    }
    return fallback;
  }
}

/**
 * Runs `work` with `ctx` active. A context manager that throws before `work` began runs it without the context; one
 * that throws after it gives `work`'s own outcome: it never runs twice.
 */
export function withContext<T>(ctx: Context, work: () => T): T {
  let done: { value: T } | { error: unknown } | undefined;
  safely(
    () =>
      context.with(ctx, () => {
        try {
          done = { value: work() };
        } catch (error) {
          done = { error };
        }
      }),
    undefined,
  );
  const settled = done as { value: T } | { error: unknown } | undefined;
  if (settled === undefined) return work();
  if ("error" in settled) throw settled.error;
  return settled.value;
}

/** The active context, or the root one when the context manager throws. */
export function activeContext(): Context {
  return safely(() => context.active(), ROOT_CONTEXT);
}

/** `parent` with `span` as its active span. */
export function withSpan(parent: Context, span: GuardedSpan): Context {
  return safely(() => trace.setSpan(parent, span.inner), parent);
}

const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** A span whose every method is `safely` done: one the SDK failed to make is a span that records nothing. */
export class GuardedSpan implements Span {
  readonly #span: Span;

  constructor(make: () => Span) {
    this.#span = safely(make, NO_SPAN);
  }

  /** The span the SDK made, to make it the active one. */
  get inner(): Span {
    return this.#span;
  }

  spanContext(): SpanContext {
    return safely(() => this.#span.spanContext(), INVALID_SPAN_CONTEXT);
  }
  isRecording(): boolean {
    return safely(() => this.#span.isRecording(), false);
  }
  setAttribute(key: string, value: AttributeValue): this {
    safely(() => this.#span.setAttribute(key, value), undefined);
    return this;
  }
  setAttributes(attributes: Attributes): this {
    safely(() => this.#span.setAttributes(attributes), undefined);
    return this;
  }
  addEvent(name: string, attributes?: Attributes | TimeInput, time?: TimeInput): this {
    safely(() => this.#span.addEvent(name, attributes, time), undefined);
    return this;
  }
  addLink(link: Link): this {
    safely(() => this.#span.addLink(link), undefined);
    return this;
  }
  addLinks(links: Link[]): this {
    safely(() => this.#span.addLinks(links), undefined);
    return this;
  }
  setStatus(status: SpanStatus): this {
    safely(() => this.#span.setStatus(status), undefined);
    return this;
  }
  updateName(name: string): this {
    safely(() => this.#span.updateName(name), undefined);
    return this;
  }
  end(time?: TimeInput): void {
    safely(() => this.#span.end(time), undefined);
  }
  recordException(exception: Parameters<Span["recordException"]>[0], time?: TimeInput): void {
    safely(() => this.#span.recordException(exception, time), undefined);
  }
}
