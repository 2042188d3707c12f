import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** A new token for the console: 192 random bits, URL-safe. */
export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** What a request may do, as the guard judges it. */
export type Verdict = "ok" | "no token" | "wrong host";

/**
 * Guards one console: every request needs its token, once from the URL it
 * printed (`?token=…`, then kept in an HttpOnly, SameSite=Strict cookie of
 * its own port) or as `Authorization: Bearer …`; a console on a loopback
 * address answers only requests naming a loopback host (no DNS rebinding);
 * a post needs the form token its pages hold (no cross-site forms).
 */
export class Guard {
  readonly #token: Buffer;
  readonly cookie: string;
  /** The form token: derived from the token, so it proves a post came from a page the console served. */
  readonly csrf: string;
  readonly #loopback: boolean;

  constructor(token: string, host: string, port: number) {
    this.#token = Buffer.from(token, "utf8");
    this.cookie = `durable_console_${port}`;
    this.csrf = createHmac("sha256", token).update("durable-console form").digest("base64url");
    this.#loopback = isLoopback(host);
  }

  /** Whether `request` may read. */
  check(request: IncomingMessage): Verdict {
    if (this.#loopback && !isLoopback(hostName(request.headers.host ?? ""))) return "wrong host";
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1];
    const cookie = cookies(request.headers.cookie ?? "").get(this.cookie);
    return this.matches(bearer) || this.matches(cookie) ? "ok" : "no token";
  }

  /** True when `given` is the token (compared in constant time). */
  matches(given: string | undefined): boolean {
    if (given === undefined) return false;
    const bytes = Buffer.from(given, "utf8");
    return bytes.length === this.#token.length && timingSafeEqual(bytes, this.#token);
  }

  /** True when `given` is the form token. */
  formMatches(given: string | null): boolean {
    if (given === null) return false;
    const bytes = Buffer.from(given, "utf8");
    const csrf = Buffer.from(this.csrf, "utf8");
    return bytes.length === csrf.length && timingSafeEqual(bytes, csrf);
  }

  /** The cookie that keeps the token for this console's pages. */
  setCookie(token: string): string {
    return `${this.cookie}=${token}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
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
