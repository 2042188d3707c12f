import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync } from "node:fs";
import { checkOptions, type OptionTable } from "../base/option-checks.js";
import type { DurableEvent, EventSink } from "./events.js";

/** Options of `jsonlEventSink`. */
interface JsonlSinkOptions {
  /** Force each event to disk before the run goes on. */
  readonly fsync?: boolean;
}

const JSONL_SINK_OPTIONS: OptionTable<JsonlSinkOptions> = { fsync: "boolean" };

/**
 * A durable event sink: each event is appended to a JSON Lines file (and,
 * with `fsync`, forced to disk) before the run goes on, so a run viewer or an
 * audit can read what happened after any crash. Several processes may append
 * to one file: each event is one `write` of one line.
 */
export function jsonlEventSink(path: string, options: JsonlSinkOptions = {}): EventSink {
  checkOptions("jsonlEventSink", options, JSONL_SINK_OPTIONS);
  return (event) => {
    const line = `${JSON.stringify(event)}\n`;
    if (options.fsync !== true) {
      appendFileSync(path, line);
      return;
    }
    const fd = openSync(path, "a");
    try {
      appendFileSync(fd, line);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  };
}

/**
 * Reads the events of a JSON Lines file written by `jsonlEventSink`: a torn
 * last line (a crash mid-write), and any line that holds no event, is skipped.
 */
export function readJsonlEvents(path: string): DurableEvent[] {
  if (!existsSync(path)) return [];
  const events: DurableEvent[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const event = eventOfLine(line);
    if (event !== undefined) events.push(event);
  }
  return events;
}

/**
 * The event a line of a JSON Lines event log holds, or undefined: a line that
 * is not JSON (torn, or broken), or not an object with a type, a run id and a
 * time, holds none. What every reader of the log skips.
 */
export function eventOfLine(line: string): DurableEvent | undefined {
  if (line.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const { type, runId, at } = value as Record<string, unknown>;
  return typeof type === "string" && typeof runId === "string" && typeof at === "string"
    ? (value as DurableEvent)
    : undefined;
}
