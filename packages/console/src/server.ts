import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { userInfo, hostname } from "node:os";
import type { RunStatus } from "@durable/core/store";
import {
  type CheckpointKeys,
  type CheckpointStore,
  DurableError,
  type EncryptionKeys,
  InvalidInput,
} from "@durable/core";
import { checkOptions, type OptionTable, Sealer } from "@durable/core/runner";
import type { Acting } from "./acting.js";
import { recordAction } from "./actions.js";
import { SCRIPT, STYLE } from "./assets.js";
import { Guard, newToken } from "./auth.js";
import { EventLog } from "./event-log.js";
import { forkPage } from "./fork-page.js";
import { checkSchemas, type StateSchemas } from "./fork-state.js";
import { esc, type Frame, layout, type PageNotice, runHref } from "./html.js";
import { type ListFilters, listPage, unfinishedByVersion } from "./list-page.js";
import { checkKey, type KeyCheck, readRunList } from "./list-view.js";
import { notFoundPage, problemPage, runPage } from "./run-page.js";
import { readHead, readRun, TIMELINE_PAGE, type TimelinePage } from "./run-view.js";
import { placeOf, valueAt, valueFileName, type ValuePlace } from "./values.js";

/** Options of `startConsole`. */
export interface ConsoleOptions {
  readonly store: CheckpointStore;
  /**
   * The workers' key: it verifies every row read, and signs what an action records (only with `allowActions`).
   * An Ed25519 public key only verifies: a console holding one reads and cannot act.
   */
  readonly checkpointKey: CheckpointKeys;
  /** The workers' `encryptionKey`, when their runs are encrypted: without it an encrypted run shows as encrypted, unread. */
  readonly encryptionKey?: EncryptionKeys;
  /** How the store is named on every page (never with a password). */
  readonly label: string;
  /** Default 127.0.0.1: only this machine reaches it. */
  readonly host?: string;
  /** Default 4174; 0 takes any free port. */
  readonly port?: number;
  /** The token every request needs (default: a new random one, in the returned `url`). */
  readonly token?: string;
  /** Serve the action forms and record their posts (default false: the console only reads). */
  readonly allowActions?: boolean;
  /** Who acts, recorded with each action (default: `<user>@<host>` of this process). */
  readonly by?: string;
  /**
   * The flows' state schemas, by flow name (Standard Schemas: zod, valibot, …): a fork's edited state is checked
   * with its flow's, and must parse to itself. A flow without one forks only with its state as it was.
   */
  readonly schemas?: StateSchemas;
  /** A JSON Lines event log (`jsonlEventSink`): adds step times, durations and the events to run pages. */
  readonly events?: string;
  /** How often the list and a run's page look for changes, in ms (default 5,000). */
  readonly refreshMs?: number;
  /** Runs per page (default 50). */
  readonly pageSize?: number;
}

const CONSOLE_OPTIONS: OptionTable<ConsoleOptions> = {
  store: true,
  checkpointKey: true,
  encryptionKey: true,
  label: true,
  host: "string",
  port: true,
  token: "string",
  allowActions: "boolean",
  by: "string",
  schemas: "object",
  events: "string",
  refreshMs: true,
  pageSize: true,
};

/** A console that serves. */
export interface RunningConsole {
  /**
   * Where a browser opens it, with its token: open it once, the token is then
   * kept in a cookie. On a loopback address its host is a name of its own,
   * `<random>.localhost`, so no other local server receives that cookie.
   */
  readonly url: string;
  /** The address it serves on (`http://127.0.0.1:4174`): for programs, with `Authorization: Bearer <token>`. */
  readonly api: string;
  readonly token: string;
  /** How the newest runs verified with the key at start (undefined: the store cannot list runs). */
  readonly keyCheck: KeyCheck | undefined;
  close(): Promise<void>;
}

const STATUSES: ReadonlySet<string> = new Set(["running", "paused", "done", "failed"]);
const MAX_FORM_BYTES = 1_000_000;

/**
 * Serves the console: `/` lists runs (filters and pages in the query),
 * `/runs/<id>` shows one, `/runs/<id>/actions` records a posted action,
 * `/api/runs` and `/api/runs/<id>` answer the same as JSON, `?head` its step
 * and status alone (from the latest checkpoint), `/api/runs/<id>/calls/<call>/args|result`
 * and `/api/runs/<id>/steps/<n>` a value whole (pages cut big ones). Every request
 * needs the token; every page is escaped and served under a strict
 * Content-Security-Policy; the key is never sent.
 */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  checkOptions("startConsole", options, CONSOLE_OPTIONS);
  const host = options.host ?? "127.0.0.1";
  const token = options.token ?? newToken();
  if (token.length < 16) throw new InvalidInput("The console's token must be at least 16 characters.");
  const sealer = Sealer.withKeys(options.checkpointKey, options.encryptionKey);
  if (options.allowActions === true && !sealer.canSeal)
    throw new InvalidInput(
      "Actions need a key that signs: an Ed25519 public key only verifies. Give the workers' private key, or serve read only.",
    );
  const frame: Frame = { store: options.label, actions: options.allowActions === true };
  const refreshMs = options.refreshMs ?? 5_000;
  const schemas = options.schemas ?? {};
  checkSchemas(schemas);
  const acting: Acting = {
    store: options.store,
    keys: options.checkpointKey,
    encryptionKey: options.encryptionKey,
    by: options.by ?? `${userInfo().username}@${hostname()}`,
    schemas,
  };
  let guard: Guard | undefined;

  const eventLog = options.events === undefined ? undefined : new EventLog(options.events);
  // Read whole once at start: a request then reads only what was appended since.
  eventLog?.skippedLines();

  const handle = async (request: IncomingMessage, url: URL, g: Guard): Promise<Reply> => {
    const path = url.pathname;
    if (path === "/" || path === "/api/runs") {
      const filters = filtersOf(url);
      const list = await readRunList(options.store, sealer, {
        limit: options.pageSize ?? 50,
        ...(filters.q === "" ? {} : { runIdPrefix: filters.q }),
        ...(filters.name === "" ? {} : { name: filters.name }),
        ...(filters.status.length === 0 ? {} : { status: filters.status }),
        ...(filters.cursor === undefined ? {} : { cursor: filters.cursor }),
      });
      if (path !== "/") return jsonReply(200, list);
      const versions = filters.name === "" ? undefined : await unfinishedByVersion(options.store, sealer, filters.name);
      return html(200, listPage(frame, filters, list, Date.now(), refreshMs, versions));
    }
    const api = path.startsWith("/api/runs/");
    if (!api && !path.startsWith("/runs/")) return html(404, layout(frame, "Not found", "<h1>Not found</h1>"));
    // The run id is one encoded part; what follows it names an action (pages) or a value (the API).
    const [encoded = "", ...tail] = path.slice(api ? "/api/runs/".length : "/runs/".length).split("/");
    const runId = decodeURIComponent(encoded);
    const posted = !api && tail.length === 1 && tail[0] === "actions";
    const place = api ? placeOf(tail) : undefined;
    // `/runs/<id>/fork/<step>`: the fork form of a step.
    const forkAt = !api && tail.length === 2 && tail[0] === "fork" ? stepNumber(tail[1] ?? null) : undefined;
    if (tail.length > 0 && !posted && place === undefined && forkAt === undefined)
      return api ? jsonReply(404, { error: "not found" }) : html(404, layout(frame, "Not found", "<h1>Not found</h1>"));
    if (api && tail.length === 0 && url.searchParams.has("head")) {
      const head = await readHead(options.store, sealer, runId);
      return head === undefined
        ? jsonReply(404, { error: "not found" })
        : jsonReply("problem" in head ? 409 : 200, head);
    }
    let notice: PageNotice | undefined;
    let refused: URLSearchParams | undefined;
    let status = 200;
    if ((posted || forkAt !== undefined) && !frame.actions)
      return html(403, layout(frame, "Read-only", "<h1>This console only reads: start it with --allow-actions.</h1>"));
    if (posted) {
      if (request.method !== "POST") return html(405, layout(frame, "Not allowed", "<h1>Actions are posted</h1>"));
      if (!g.sameOrigin(request))
        return html(
          403,
          layout(frame, "Refused", "<h1>The form was posted from another site: open the console's own page.</h1>"),
        );
      const form = new URLSearchParams(await bodyOf(request));
      if (!g.formMatches(form.get("csrf")))
        return html(403, layout(frame, "Refused", "<h1>The form is not this console's: reload the page.</h1>"));
      try {
        const done = await recordAction(acting, runId, form);
        const location = `${runHref(done.runId)}?done=${encodeURIComponent(done.text)}`;
        return { status: 303, headers: { location }, body: "" };
      } catch (error) {
        if (!(error instanceof DurableError)) throw error;
        notice = { kind: "problem", text: `Refused: ${error.message}` };
        refused = form;
        status = error.code === "INVALID_INPUT" ? 400 : 409;
      }
    } else if (request.method !== "GET") return html(405, layout(frame, "Not allowed", "<h1>Not allowed</h1>"));
    const done = url.searchParams.get("done");
    if (notice === undefined && done !== null) notice = { kind: "notice", text: done };
    // A fork's form shows its step alone: the one asked for, or the one of a fork refused.
    const forkStep = forkAt ?? (refused?.get("action") === "fork" ? stepNumber(refused.get("from")) : undefined);
    const page = forkStep === undefined ? timelinePage(url, place) : { size: 1, before: forkStep + 1 };
    const read = await readRun(options.store, sealer, runId, eventLog?.of(runId) ?? [], page);
    const skipped = eventLog?.skippedLines() ?? 0;
    const run =
      read !== undefined && !("problem" in read) && skipped > 0 ? { ...read, skippedEventLines: skipped } : read;
    if (run === undefined) return api ? jsonReply(404, { error: "not found" }) : html(404, notFoundPage(frame, runId));
    if ("problem" in run) return api ? jsonReply(409, run) : html(409, problemPage(frame, run));
    if (place !== undefined) {
      const value = valueAt(run, place);
      if (value === undefined) return jsonReply(404, { error: "not found" });
      const name = valueFileName(runId, place);
      return {
        ...jsonReply(200, value),
        headers: { ...JSON_TYPE, "content-disposition": `attachment; filename="${name}"` },
      };
    }
    if (api) return jsonReply(200, run);
    const actions = { allowed: frame.actions, csrf: g.csrf, ...(refused === undefined ? {} : { posted: refused }) };
    if (forkStep === undefined) return html(status, runPage(frame, run, actions, refreshMs, notice));
    const step = run.steps.find((each) => each.step === forkStep);
    if (step === undefined)
      return html(404, layout(frame, "Not found", `<h1>No step ${forkStep} of ${esc(runId)}</h1>`));
    return html(status, forkPage(frame, run, step, actions, { schema: Object.hasOwn(schemas, run.name) }, notice));
  };

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://console");
    if (url.pathname === "/assets/console.css") return send(response, asset(STYLE, "text/css"));
    if (url.pathname === "/assets/console.js") return send(response, asset(SCRIPT, "text/javascript"));
    const g = guard as Guard;
    const verdict = g.check(request);
    if (verdict === "wrong host")
      return send(response, text(421, "This console answers only on this machine's loopback address."));
    const given = url.searchParams.get("token");
    if (given !== null && request.method === "GET") {
      if (!g.matches(given)) return send(response, html(401, locked(frame)));
      // Opened by an address, not the console's own name: go there first, where its cookie stays.
      if (!g.ownHost(request))
        return send(response, {
          status: 303,
          headers: { location: `http://${g.host}${url.pathname}${url.search}` },
          body: "",
        });
      // The printed URL: keep the token in a cookie and go on without it in the address bar.
      url.searchParams.delete("token");
      return send(response, {
        status: 303,
        headers: { location: `${url.pathname}${url.search}`, "set-cookie": g.setCookie(token) },
        body: "",
      });
    }
    if (verdict === "no token") return send(response, html(401, locked(frame)));
    handle(request, url, g).then(
      (reply) => send(response, reply),
      (error: unknown) => {
        const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        const code = error instanceof DurableError ? error.code : "";
        const status = code === "INVALID_INPUT" ? 400 : code === "STORE_UNAVAILABLE" ? 503 : 500;
        const page = `<h1>The console could not answer</h1><p class="problem" role="alert">${esc(message)}</p><p><a href="/">All runs</a></p>`;
        send(response, html(status, layout(frame, "Error", page)));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 4174, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  // Set before anything is awaited: a request may come in as soon as the server listens.
  guard = new Guard(token, host, port);
  const keyCheck = await checkKey(options.store, sealer).catch(async (error: unknown) => {
    await new Promise((resolve) => server.close(resolve));
    throw error;
  });
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${guard.host}/?token=${token}`,
    api: `http://${shown}:${port}`,
    token,
    keyCheck,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A response: status, headers beside the common ones, body. */
interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const html = (status: number, body: string): Reply => ({
  status,
  headers: { "content-type": "text/html; charset=utf-8" },
  body,
});
const text = (status: number, body: string): Reply => ({
  status,
  headers: { "content-type": "text/plain; charset=utf-8" },
  body,
});
const JSON_TYPE = { "content-type": "application/json; charset=utf-8" } as const;
const jsonReply = (status: number, value: unknown): Reply => ({
  status,
  headers: JSON_TYPE,
  body: JSON.stringify(value),
});
const asset = (body: string, type: string): Reply => ({
  status: 200,
  headers: { "content-type": `${type}; charset=utf-8` },
  body,
});

function send(response: ServerResponse, reply: Reply): void {
  response.writeHead(reply.status, {
    "cache-control": "no-store",
    "content-security-policy":
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    ...reply.headers,
  });
  response.end(reply.body);
}

function locked(frame: Frame): string {
  return layout(
    frame,
    "Token needed",
    "<h1>This console needs its token</h1><p>Open the address it printed when it started (it ends with <code>?token=…</code>).</p>",
  );
}

function filtersOf(url: URL): ListFilters {
  const status = url.searchParams.getAll("status").filter((s): s is RunStatus => STATUSES.has(s));
  const cursor = url.searchParams.get("cursor");
  return {
    q: url.searchParams.get("q") ?? "",
    name: url.searchParams.get("name") ?? "",
    status,
    ...(cursor === null || cursor === "" ? {} : { cursor }),
  };
}

/** The timeline's page a request asks for: `?before=<step>`, or the one step whose value is downloaded. */
function timelinePage(url: URL, place: ValuePlace | undefined): TimelinePage {
  if (place !== undefined && "step" in place) return { size: 1, before: place.step + 1 };
  const before = stepNumber(url.searchParams.get("before"));
  return before === undefined ? { size: TIMELINE_PAGE } : { size: TIMELINE_PAGE, before };
}

/** A step named in a path or a form: a whole number of up to 9 digits, else undefined. */
function stepNumber(text: string | null): number | undefined {
  return text !== null && /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new InvalidInput("The form is too large.");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
