import type { JsonValue } from "@durable/core";
import { preview } from "./preview.js";

/** Escapes text for HTML content and quoted attributes: every run id, name and value is user data. */
export function esc(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A badge: `kind` picks its colour (a CSS class of letters and dashes), `text` is what it says. */
export function badge(kind: string, text: string): string {
  return `<span class="badge ${kind.replace(/[^a-z-]/g, "-")}">${esc(text)}</span>`;
}

/** An ISO time, or ms since the epoch, as `2026-12-04 18:51:47Z` ("" for no time or one no date has). */
export function time(at: string | number): string {
  const iso = typeof at === "number" ? (isoTime(at) ?? "") : at;
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** Ms since the epoch as an ISO time; undefined for 0 (no time kept) or a value no date has (a store's column written past it). */
export function isoTime(ms: number): string | undefined {
  const date = new Date(ms);
  return typeof ms === "number" && ms > 0 && Number.isFinite(date.getTime()) ? date.toISOString() : undefined;
}

/** Spans of time a page names, each used up to twice its size in the unit below: `90 s`, `2 h`, `3 days`, `12 years`. */
const SPANS: ReadonlyArray<readonly [seconds: number, unit: string]> = [
  [1, "s"],
  [60, "min"],
  [3_600, "h"],
  [86_400, "days"],
  [31_557_600, "years"],
];

/** How far `ms` is from now, as `in 12 s`, `3 min ago` or `in 10 days` (a wait with no timeout: thousands of years). */
export function fromNow(ms: number, now: number): string {
  const delta = Math.round((ms - now) / 1000);
  const size = Math.abs(delta);
  const [seconds, unit] = SPANS.findLast(([each], i) => i === 0 || size >= each * 2) ?? [1, "s"];
  const span = `${Math.round(size / seconds).toLocaleString("en-US")} ${unit}`;
  return delta >= 0 ? `in ${span}` : `${span} ago`;
}

/** How much of a value a page prints: a bigger one is cut, the whole a download away. */
export const SHOWN_CHARS = 4_000;

/**
 * A JSON value, pretty-printed and escaped, in a `<pre>`; past `SHOWN_CHARS`
 * characters cut, saying its size, with a link to the whole value (`whole`)
 * when there is an address for it. One big result would otherwise make every
 * page that shows it as big.
 */
export function json(value: JsonValue | undefined, whole?: string): string {
  if (value === undefined) return `<pre class="json">—</pre>`;
  const shown = preview(value, SHOWN_CHARS);
  if (!shown.cut) return `<pre class="json">${esc(shown.text)}</pre>`;
  const link = whole === undefined ? "" : `: <a href="${esc(whole)}" download>the whole value</a>`;
  return `<pre class="json">${esc(shown.text)}…</pre><p class="meta cut">Cut at ${SHOWN_CHARS.toLocaleString("en")} characters of about ${sizeText(shown.size)}${link}.</p>`;
}

/** A size in bytes as people read it: `812 B`, `4.1 KB`, `20.9 MB`. */
function sizeText(bytes: number): string {
  if (bytes < 1_000) return `${bytes} B`;
  return bytes < 1_000_000 ? `${(bytes / 1_000).toFixed(1)} KB` : `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** A path of this console with its query, each part encoded. */
export function href(
  path: string,
  query: Readonly<Record<string, string | readonly string[] | undefined>> = {},
): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const each of typeof value === "string" ? [value] : value) if (each !== "") params.append(name, each);
  }
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}

/** The link to a run's page. */
export function runHref(runId: string): string {
  return `/runs/${encodeURIComponent(runId)}`;
}

/** What every page has around its content: the header naming the store, the stylesheet and the script. */
export interface Frame {
  /** How the store is named (its URL without credentials). */
  readonly store: string;
  readonly actions: boolean;
}

export function layout(frame: Frame, title: string, body: string, data: Readonly<Record<string, string>> = {}): string {
  const attributes = Object.entries(data)
    .map(([name, value]) => ` data-${name}="${esc(value)}"`)
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)} · @durable console</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<link rel="stylesheet" href="/assets/console.css"><script src="/assets/console.js" defer></script></head>
<body${attributes}><a class="skip" href="#main">Skip to content</a>
<header><a href="/" class="home">@durable console</a> <span class="store">store <code>${esc(frame.store)}</code></span>
<span class="mode">${frame.actions ? badge("actions", "actions on") : badge("read-only", "read-only")}</span></header>
<main id="main" tabindex="-1">${body}</main>
<div id="live-status" class="visually-hidden" role="status" aria-live="polite"></div></body></html>`;
}

/** What a page says besides what it shows: the outcome of an action just taken, or why it was refused. */
export interface PageNotice {
  readonly kind: "notice" | "problem";
  readonly text: string;
}

/** A notice as a page shows it: a problem is an alert, an outcome a status ("" for none). */
export function noticeLine(notice: PageNotice | undefined): string {
  if (notice === undefined) return "";
  return `<p class="${notice.kind}" role="${notice.kind === "problem" ? "alert" : "status"}">${esc(notice.text)}</p>`;
}
