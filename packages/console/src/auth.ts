import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** A new token for the console: 192 random bits, URL-safe. */
export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** What a request may do, as the guard judges it. */
export type Verdict = "ok" | "no token" | "wrong host";

/**
 * Guards one console: every request needs its token, once from the URL it
 * printed (`?token=…`, then kept in an HttpOnly, SameSite=Strict cookie) or
 * as `Authorization: Bearer …`; a console on a loopback address answers only
 * requests naming a loopback host (no DNS rebinding); a post needs the form
 * token its pages hold (no cross-site forms), and a browser's post must come
 * from the console's own pages (`sameOrigin`).
 *
 * A cookie is not tied to a port: one set for 127.0.0.1 reaches every server
 * on 127.0.0.1. So a loopback console has a host name of its own, a random
 * `<id>.localhost` (browsers resolve `*.localhost` to loopback and keep its
 * cookies to it), and takes its cookie only on requests to that name.
 */
export class Guard {
  readonly #token: Buffer;
  readonly cookie: string;
  /** The form token: random, not derived from the token, so a token seen elsewhere forges no post. */
  readonly csrf: string = randomBytes(24).toString("base64url");
  readonly #loopback: boolean;
  /** The host (and port) browsers reach this console by: its own name on loopback, else the address it serves on. */
  readonly host: string;
  /** `host` as a browser names it in the Host header: without the port when it is HTTP's own, 80. */
  readonly #hostHeader: string;
  /** The origins of this console's own pages: its own name's, and its bound address's. */
  readonly #origins: ReadonlySet<string>;

  constructor(token: string, host: string, port: number) {
    this.#token = Buffer.from(token, "utf8");
    this.cookie = `durable_console_${port}`;
    this.#loopback = isLoopback(host);
    const name = this.#loopback ? `${randomBytes(8).toString("hex")}.localhost` : host;
    const shown = name.includes(":") ? `[${name}]` : name;
    this.host = `${shown}:${port}`;
    this.#hostHeader = port === 80 ? shown : this.host;
    const bound = host.includes(":") ? `[${host}]` : host;
    this.#origins = new Set([`http://${this.#hostHeader}`, `http://${port === 80 ? bound : `${bound}:${port}`}`]);
  }

  /** Whether `request` may read. */
  check(request: IncomingMessage): Verdict {
    const host = request.headers.host ?? "";
    if (this.#loopback && !isLoopback(hostName(host))) return "wrong host";
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1];
    if (this.matches(bearer)) return "ok";
    const cookie = cookies(request.headers.cookie ?? "").get(this.cookie);
    return this.ownHost(request) && this.matches(cookie) ? "ok" : "no token";
  }

  /** Whether `request` names this console's own host: where its cookie is set and taken. */
  ownHost(request: IncomingMessage): boolean {
    return !this.#loopback || request.headers.host === this.#hostHeader;
  }

  /** True when `given` is the token (compared in constant time). */
  matches(given: string | undefined): boolean {
    if (given === undefined) return false;
    const bytes = Buffer.from(given, "utf8");
    return bytes.length === this.#token.length && timingSafeEqual(bytes, this.#token);
  }

  /**
   * Whether a post comes from this console's own pages, by what the browser
   * says of its origin: `Sec-Fetch-Site`, when sent, is `same-origin`, and
   * `Origin`, when sent, is the console's own or `null` (its pages' `no-referrer`
   * policy has browsers send `null` for their own forms). A program sends
   * neither; a page of another site or of another local server is refused even
   * with the token and the form token.
   */
  sameOrigin(request: IncomingMessage): boolean {
    const site = request.headers["sec-fetch-site"];
    const origin = request.headers.origin;
    return (
      (site === undefined || site === "same-origin") &&
      (origin === undefined || origin === "null" || this.#origins.has(origin))
    );
  }

  /** True when `given` is the form token. */
  formMatches(given: string | null): boolean {
    if (given === null) return false;
    const bytes = Buffer.from(given, "utf8");
    const csrf = Buffer.from(this.csrf, "utf8");
    return bytes.length === csrf.length && timingSafeEqual(bytes, csrf);
  }

  /** The cookie that keeps the token for this console's pages: for its own host only (no Domain). */
  setCookie(token: string): string {
    return `${this.cookie}=${token}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The host of a Host header, without its port or IPv6 brackets. */
function hostName(header: string): string {
  const bracketed = /^\[([^\]]+)\]/.exec(header);
  return bracketed?.[1] ?? header.replace(/:\d+$/, "");
}

function cookies(header: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at > 0) found.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return found;
}
