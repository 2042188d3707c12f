import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type { DurableEvent } from "@durable/core";
import { eventOfLine } from "@durable/core/runner";

/** How much of the file one read takes. */
const CHUNK = 1 << 20;
const NEWLINE = 0x0a;
/** How many of the file's first bytes tell it from one written again in its place. */
const HEAD = 256;

/**
 * A JSON Lines event log (`jsonlEventSink`) read as it grows: each look reads
 * only the bytes appended since the last, and keeps where each run's lines
 * are (not the events), so a page reads its own run's lines alone, whatever
 * the file's size. A line that is not an event (broken, or of another shape)
 * is skipped and counted; a last line with no newline yet (a write under way)
 * is read once it is whole; a file that was replaced or truncated is read anew.
 */
export class EventLog {
  readonly #path: string;
  /** Where the next unread line starts. */
  #offset = 0;
  /** Each run's lines: start and length, in pairs. */
  #places = new Map<string, number[]>();
  #skipped = 0;
  /** The file read (device and inode): another one at the path is read from its start. */
  #file: string | undefined;
  /** The first bytes read: a file cut short and written again since holds others, and is read from its start. */
  #head = Buffer.alloc(0);

  constructor(path: string) {
    this.#path = path;
  }

  /** Reads what was appended, and says how many lines of the file are not events (skipped). */
  skippedLines(): number {
    const fd = this.#catchUp();
    if (fd !== undefined) closeSync(fd);
    return this.#skipped;
  }

  /** The run's events, oldest first. */
  of(runId: string): DurableEvent[] {
    const fd = this.#catchUp();
    if (fd === undefined) return [];
    try {
      const places = this.#places.get(runId) ?? [];
      const events: DurableEvent[] = [];
      for (let i = 0; i < places.length; i += 2) {
        const line = Buffer.allocUnsafe(places[i + 1] as number);
        readSync(fd, line, 0, line.length, places[i] as number);
        const event = eventOfLine(line.toString("utf8"));
        if (event?.runId === runId) events.push(event);
      }
      return events;
    } finally {
      closeSync(fd);
    }
  }

  /** Reads what was appended since the last look; the open file, or undefined when there is none. */
  #catchUp(): number | undefined {
    let fd: number;
    try {
      fd = openSync(this.#path, "r");
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT") throw error;
      this.#reset(undefined);
      return undefined;
    }
    try {
      this.#readFrom(fd);
      return fd;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** Indexes the lines appended to the open file since the last look. */
  #readFrom(fd: number): void {
    const stat = fstatSync(fd);
    const file = `${stat.dev}:${stat.ino}`;
    if (file !== this.#file || stat.size < this.#offset || !this.#sameHead(fd)) this.#reset(file);
    if (this.#head.length < HEAD && this.#head.length < stat.size) {
      const head = Buffer.alloc(Math.min(HEAD, stat.size));
      this.#head = head.subarray(0, readSync(fd, head, 0, head.length, 0));
    }
    const chunk = Buffer.allocUnsafe(CHUNK);
    let rest = Buffer.alloc(0);
    let position = this.#offset;
    while (position < stat.size) {
      const read = readSync(fd, chunk, 0, Math.min(CHUNK, stat.size - position), position);
      if (read === 0) break;
      const data = rest.length === 0 ? chunk.subarray(0, read) : Buffer.concat([rest, chunk.subarray(0, read)]);
      const base = position - rest.length;
      let start = 0;
      for (let end = data.indexOf(NEWLINE); end >= 0; end = data.indexOf(NEWLINE, start)) {
        this.#index(data.subarray(start, end), base + start);
        start = end + 1;
      }
      // Copied: the chunk is read into again.
      rest = Buffer.from(data.subarray(start));
      position += read;
    }
    this.#offset = position - rest.length;
  }

  #index(line: Buffer, start: number): void {
    if (line.length === 0) return;
    const event = eventOfLine(line.toString("utf8"));
    if (event === undefined) {
      this.#skipped += 1;
      return;
    }
    const places = this.#places.get(event.runId);
    if (places === undefined) this.#places.set(event.runId, [start, line.length]);
    else places.push(start, line.length);
  }

  /** Whether the file still starts with the bytes first read from it. */
  #sameHead(fd: number): boolean {
    const now = Buffer.alloc(this.#head.length);
    return readSync(fd, now, 0, now.length, 0) === now.length && now.equals(this.#head);
  }

  #reset(file: string | undefined): void {
    this.#file = file;
    this.#offset = 0;
    this.#places = new Map();
    this.#skipped = 0;
    this.#head = Buffer.alloc(0);
  }
}
