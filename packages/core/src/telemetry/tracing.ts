import {
  type Attributes,
  type Context,
  createTraceState,
  isSpanContextValid,
  type Link,
  type Span,
  type SpanOptions,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { isJsonObject, isString, type JsonObject, type JsonValue } from "../base/json.js";
import { activeContext, GuardedSpan, safely, withContext, withSpan } from "./guard.js";

/** The tracer's name: the instrumentation scope of every span @durable makes. */
export const TRACER_NAME = "@durable/core";

/**
 * A run's trace, as its checkpoints seal it (the envelope's `trace`): the W3C
 * `traceparent` of the span that started the run, which parents every attempt
 * (so a run another worker recovers goes on in the same trace), and that of
 * the latest attempt, which the next one links to. Absent on runs started
 * where no OpenTelemetry SDK records: they cost nothing, in time or bytes.
 */
export interface RunTrace {
  /** The `traceparent` of the run's start span. */
  readonly run: string;
  /** Its `tracestate`, when it had one. */
  readonly state?: string;
  /** The `traceparent` of the latest attempt (a drive of the run), set by the claim that began it. */
  readonly attempt?: string;
}

/** What every span of a run says of it. */
export interface RunAttributes {
  readonly runId: string;
  readonly kind: string;
  readonly name: string;
  readonly version?: string | number | undefined;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Starts a span on the tracer of the provider registered now (one registered after this module loaded counts). */
export function startSpan(name: string, options: SpanOptions, parent: Context = activeContext()): GuardedSpan {
  return new GuardedSpan(() => trace.getTracer(TRACER_NAME).startSpan(name, options, parent));
}

/** The attributes of a run's spans. */
export function runAttributes(run: RunAttributes): Attributes {
  return {
    "durable.run.id": run.runId,
    "durable.run.kind": run.kind,
    "durable.run.name": run.name,
    ...(run.version === undefined ? {} : { "durable.run.version": String(run.version) }),
  };
}

/**
 * Makes the span of a run's start (step 0) under the caller's active span and
 * ends it: its context, sealed with the run, parents every attempt. Undefined
 * when no SDK records spans.
 */
export function traceStart(run: RunAttributes): RunTrace | undefined {
  const span = startSpan(`durable.start ${run.name}`, { kind: SpanKind.PRODUCER, attributes: runAttributes(run) });
  const traceparent = span.isRecording() ? traceparentOf(span.spanContext()) : undefined;
  span.end();
  return traceparent === undefined ? undefined : { run: traceparent, ...stateOf(span) };
}

/**
 * One attempt of a run: a drive, from its claim (or start) to its stop, under
 * the run's start span; linked to the attempt before it, which may have died
 * on another worker. The claim seals `sealed` (the run's trace with this
 * attempt as the latest), so the next attempt links to this one.
 */
export class AttemptSpan {
  readonly span: GuardedSpan;
  readonly context: Context;
  readonly #trace: RunTrace | undefined;

  constructor(run: RunAttributes, sealed: RunTrace | undefined, attributes: Attributes) {
    const parent = sealed === undefined ? activeContext() : remoteContext(sealed.run, sealed.state);
    const before = sealed?.attempt === undefined ? undefined : spanContextOf(sealed.attempt);
    const links: Link[] =
      before === undefined ? [] : [{ context: before, attributes: { "durable.link": "previous attempt" } }];
    this.span = startSpan(
      `durable.run ${run.name}`,
      { kind: SpanKind.CONSUMER, attributes: { ...runAttributes(run), ...attributes }, links },
      parent,
    );
    this.context = withSpan(parent, this.span);
    this.#trace = sealed;
  }

  /** The run's trace to seal with the attempt's claim: this attempt as the latest. Undefined while nothing records. */
  get sealed(): RunTrace | undefined {
    const attempt = this.span.isRecording() ? traceparentOf(this.span.spanContext()) : undefined;
    if (attempt === undefined) return this.#trace;
    return this.#trace === undefined ? { run: attempt, attempt } : { ...this.#trace, attempt };
  }

  /** Ends the attempt with how it stopped: its result (`status`: done, paused, asleep), or the error that stopped it. */
  end(outcome: { readonly result: unknown } | { readonly error: unknown }): void {
    if ("error" in outcome) failSpan(this.span, outcome.error);
    else {
      const status = (outcome.result as { status?: unknown } | null)?.status;
      this.span.setAttribute("durable.run.outcome", typeof status === "string" ? status : "done");
    }
    this.span.end();
  }
}

/** Runs `work` in a new span, a child of the active one, active while it runs; ended as `work` settles (with its error). */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  parent: Context = activeContext(),
): Promise<T> {
  const span = startSpan(name, { attributes }, parent);
  try {
    return await withContext(withSpan(parent, span), () => work(span));
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Runs `work` with `ctx` active (see `withContext`). */
export function inContext<T>(ctx: Context, work: () => T): T {
  return withContext(ctx, work);
}

/** Marks a span failed by `error`: its status, and the error as an exception event. */
export function failSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const exception = error instanceof Error ? error : new Error(String(error));
  span.recordException(exception);
  span.setStatus({ code: SpanStatusCode.ERROR, message: `${exception.name}: ${exception.message}` });
}

/** True for a sealed `RunTrace`: well-formed `traceparent`s. */
export function isRunTrace(value: JsonValue): value is JsonObject & RunTrace {
  if (!isJsonObject(value)) return false;
  const { run, state, attempt } = value;
  return (
    isString(run) &&
    TRACEPARENT.test(run) &&
    (state === undefined || isString(state)) &&
    (attempt === undefined || (isString(attempt) && TRACEPARENT.test(attempt)))
  );
}

/** A `RunTrace` as sealed: plain JSON. */
export function runTraceJson(sealed: RunTrace): JsonObject {
  const { run, state, attempt } = sealed;
  return { run, ...(state === undefined ? {} : { state }), ...(attempt === undefined ? {} : { attempt }) };
}

/**
 * The span's W3C `traceparent` (lowercase hex, as `isRunTrace` reads it back), or undefined for ids that are not
 * valid hex of the right length: OpenTelemetry takes ids in upper case too, and a broken SDK may give anything, and
 * a sealed `trace` no reader accepts would make every later read of the run `CheckpointStoreCorrupt`.
 */
function traceparentOf(span: SpanContext): string | undefined {
  const flags = (Number(span.traceFlags) & 0xff).toString(16).padStart(2, "0");
  const traceparent = `00-${String(span.traceId)}-${String(span.spanId)}-${flags}`.toLowerCase();
  return TRACEPARENT.test(traceparent) && isSpanContextValid(span) ? traceparent : undefined;
}

function stateOf(span: Span): { state?: string } {
  const state = safely(() => span.spanContext().traceState?.serialize(), undefined);
  return state === undefined || state === "" ? {} : { state };
}

function spanContextOf(traceparent: string, state?: string): SpanContext | undefined {
  const parts = TRACEPARENT.exec(traceparent);
  if (parts === null) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = parts;
  return {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(state === undefined ? {} : { traceState: createTraceState(state) }),
  };
}

/** A context whose parent is the sealed span: a span started in it continues that trace, in any process. */
function remoteContext(traceparent: string, state: string | undefined): Context {
  const active = activeContext();
  const parent = safely(() => spanContextOf(traceparent, state), undefined);
  return parent === undefined ? active : safely(() => trace.setSpanContext(active, parent), active);
}
