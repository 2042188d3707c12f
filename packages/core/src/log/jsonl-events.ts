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

/** Reads the events of a JSON Lines file written by `jsonlEventSink`; a torn last line (a crash mid-write) is skipped. */
export function readJsonlEvents(path: string): DurableEvent[] {
  if (!existsSync(path)) return [];
  const events: DurableEvent[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.length === 0) continue;
    try {
      events.push(JSON.parse(line) as DurableEvent);
    } catch {
      // Only the last line can be torn; anything unreadable is left out.
    }
  }
  return events;
}
