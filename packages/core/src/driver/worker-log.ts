import { InvalidInput } from "../base/errors.js";
import { describeType, isObject } from "../base/option-checks.js";
import { errorText, RecoveryNeedsDecision } from "../base/errors.js";

/** A logger as `console` is shaped: a message, first. */
interface ConsoleLikeLogger {
  info(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  error(message: string, ...rest: unknown[]): void;
}

/** A logger as pino (and bunyan) are shaped: the fields first, then the message; it has `levels` and `child`. */
interface PinoLikeLogger {
  readonly levels: unknown;
  child(bindings: Record<string, unknown>): unknown;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** An OpenTelemetry logs `Logger` (`@opentelemetry/api-logs`): one record each. */
interface OtelLikeLogger {
  emit(record: {
    severityNumber?: number;
    severityText?: string;
    body?: string;
    attributes?: Record<string, string | number | boolean>;
  }): void;
}

/** What a worker logs to: a console-, pino- or OpenTelemetry-logs-shaped logger; `false` for nothing. */
export type WorkerLogger = ConsoleLikeLogger | PinoLikeLogger | OtelLikeLogger | false;

type Level = "info" | "warn" | "error";

/** OpenTelemetry's severity numbers for INFO, WARN and ERROR. */
const SEVERITY: Record<Level, number> = { info: 9, warn: 13, error: 17 };

/** One line a worker logs: what happened, and the fields a log search filters by. */
export interface WorkerLine {
  readonly level: Level;
  readonly message: string;
  readonly fields: Readonly<Record<string, string | number | boolean>>;
}

/** Writes a worker's lines to its logger, whatever its shape; one that throws is a process warning, never a stopped run. */
export type WorkerLog = (line: WorkerLine) => void;

/** The `logger` option checked: `InvalidInput` for anything but a logger of a known shape or `false`. */
export function workerLog(where: string, logger: unknown): WorkerLog {
  if (logger === false) return () => undefined;
  const write = writerFor(logger);
  if (write === undefined)
    throw new InvalidInput(
      `${where}: logger must have info, warn and error methods (console, pino) or emit (an OpenTelemetry Logger), or be false; not ${describeType(logger)}.`,
    );
  return (line) => {
    try {
      write(line);
    } catch (error) {
      process.emitWarning(`@durable: the worker's logger failed: ${String(error)}`);
    }
  };
}

function writerFor(logger: unknown): ((line: WorkerLine) => void) | undefined {
  if (!isObject(logger)) return undefined;
  const target = logger as Record<string, unknown>;
  if (typeof target["emit"] === "function") {
    const otel = logger as unknown as OtelLikeLogger;
    return ({ level, message, fields }) =>
      otel.emit({
        severityNumber: SEVERITY[level],
        severityText: level.toUpperCase(),
        body: message,
        attributes: { ...fields },
      });
  }
  if (!["info", "warn", "error"].every((level) => typeof target[level] === "function")) return undefined;
  if (isPinoShaped(target)) {
    const pino = logger as unknown as PinoLikeLogger;
    return ({ level, message, fields }) => pino[level]({ ...fields }, message);
  }
  const plain = logger as unknown as ConsoleLikeLogger;
  return ({ level, message }) => plain[level](`@durable: ${message}`);
}

/**
 * True for pino (`levels` is `{ values, labels }`) and bunyan (`levels()` is a method), which take the fields first.
 * Winston has `levels` (a map of numbers) and `child` too, but takes the message first: it is console-shaped, or its
 * lines would be the fields, their message lost.
 */
function isPinoShaped(target: Record<string, unknown>): boolean {
  const levels = target["levels"];
  const pinoLevels = isObject(levels) && isObject(levels["values"]);
  return typeof target["child"] === "function" && (typeof levels === "function" || pinoLevels);
}

/** A line about run `runId` of a served flow or loop: the message names the run's kind and name, the fields the run. */
export function runLine(
  level: Level,
  served: { readonly kind: string; readonly name: string },
  runId: string,
  message: string,
  fields: Record<string, string | number | boolean> = {},
): WorkerLine {
  const run = { "durable.run.id": runId, "durable.run.kind": served.kind, "durable.run.name": served.name };
  return { level, message: `${served.kind} ${JSON.stringify(served.name)}: ${message}`, fields: { ...run, ...fields } };
}

/** What a worker says of a run it left at a step: it waits for a decision (its calls in doubt), or why it is stuck. */
export function leftMessage(runId: string, error: unknown): string {
  if (!(error instanceof RecoveryNeedsDecision)) return `left run ${runId}: ${errorText(error)}`;
  const calls = error.calls.map(({ tool, callId }) => `${tool} (${callId})`).join(", ");
  return `run ${runId} waits for a decision: in doubt: ${calls}`;
}
