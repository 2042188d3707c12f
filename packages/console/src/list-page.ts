import type { RunStatus } from "@durable/core/store";
import type { CheckpointStore } from "@durable/core";
import { type Sealer, versionCounts, type VersionRuns } from "@durable/core/runner";
import { badge, esc, type Frame, fromNow, href, isoTime, layout, runHref, time } from "./html.js";
import { type ListedRun, noRunVerifies, type RunList } from "./list-view.js";
import { waitingUntil } from "./waiting.js";

/** The list's filters, as the page's form and links carry them. */
export interface ListFilters {
  readonly q: string;
  readonly name: string;
  readonly status: readonly RunStatus[];
  readonly cursor?: string;
}

const STATUSES: readonly RunStatus[] = ["running", "paused", "done", "failed"];

/**
 * The unfinished runs of `name` counted by version (`versionCounts`), when any
 * recorded one: what a deployment waits on before it retires a version's
 * code. Undefined when none did, or a run of the name does not verify (its
 * row in the table says why).
 */
export async function unfinishedByVersion(
  store: CheckpointStore,
  sealer: Sealer,
  name: string,
): Promise<readonly VersionRuns[] | undefined> {
  const counts = await versionCounts(store, sealer, name).catch(() => undefined);
  return counts?.some((each) => each.version !== undefined) === true ? counts : undefined;
}

/** The page of runs: filters, the table (refreshed live), the links to older runs, and the named flow's runs left by version. */
export function listPage(
  frame: Frame,
  filters: ListFilters,
  list: RunList,
  now: number,
  refreshMs: number,
  byVersion?: readonly VersionRuns[],
): string {
  const checks = STATUSES.map(
    (status) =>
      `<label><input type="checkbox" name="status" value="${status}"${filters.status.includes(status) ? " checked" : ""}> ${status}</label>`,
  ).join("");
  const form = `<form class="filters" method="get" action="/" role="search" aria-label="Filter runs">
    <label for="q">Run id starts with<input id="q" name="q" type="search" value="${esc(filters.q)}" autocomplete="off"></label>
    <label for="name">Flow or loop name<input id="name" name="name" type="text" value="${esc(filters.name)}" autocomplete="off"></label>
    <fieldset class="check"><legend>Status</legend>${checks}</fieldset>
    <button type="submit">Filter</button> <a href="/">Clear</a>
    <label class="live" for="live"><input id="live" type="checkbox" checked> Live (every ${Math.round(refreshMs / 1000)} s)</label>
  </form>`;
  const keep = { q: filters.q, name: filters.name, status: filters.status };
  const pager = `<nav class="pager" aria-label="Pages">${
    filters.cursor === undefined ? "" : `<a href="${esc(href("/", keep))}">Newest runs</a>`
  }${list.next === undefined ? "" : `<a href="${esc(href("/", { ...keep, cursor: list.next }))}" rel="next">Older runs</a>`}</nav>`;
  // The version column only when a run of the page recorded one: runs of code that records none have no use for it.
  const versions = list.runs.some((run) => run.version !== undefined);
  const table =
    list.runs.length === 0
      ? `<p>No run matches${filters.cursor === undefined ? "" : " on this page"}.</p>`
      : `<table class="runs"><caption>Runs, newest first</caption><thead><tr>
          <th scope="col">run</th><th scope="col">name</th>${versions ? '<th scope="col">version</th>' : ""}<th scope="col">kind</th><th scope="col">status</th>
          <th scope="col">step</th><th scope="col">segment</th><th scope="col">lease</th><th scope="col">last change</th>
        </tr></thead><tbody>${list.runs.map((run) => row(run, now, versions)).join("")}</tbody></table>`;
  return layout(
    frame,
    "Runs",
    `<h1>Runs</h1>${form}${byVersion === undefined ? "" : versionsLine(filters.name, byVersion)}<div id="runs-region">${noRunVerifies(list) ? WRONG_KEY : ""}${table}${pager}</div>`,
    {
      "refresh-ms": String(refreshMs),
    },
  );
}

function row(run: ListedRun, now: number, versions: boolean): string {
  const marks = run.marks.map((mark) => badge(mark.replaceAll(" ", "-"), mark)).join("");
  const until = run.waiting === undefined ? undefined : waitingUntil(run.waiting);
  const lease =
    run.lease === undefined
      ? "—"
      : `${esc(run.lease.owner)}<br><span class="meta">${run.lease.expiresAt > now ? "expires" : "ran out"} ${esc(fromNow(run.lease.expiresAt, now))}</span>`;
  // A run that did not verify shows what the store listed: every value is text, whatever the columns hold.
  const updated = isoTime(run.updatedAt);
  return `<tr data-run-id="${esc(run.runId)}" data-status="${esc(String(run.status))}">
    <th scope="row"><a href="${esc(runHref(run.runId))}">${esc(run.runId)}</a></th>
    <td>${esc(String(run.name))}</td>${
      versions ? `<td class="version">${run.version === undefined ? "—" : esc(String(run.version))}</td>` : ""
    }<td>${esc(String(run.kind))}</td>
    <td>${badge(String(run.status), String(run.status))}${marks}${
      until === undefined ? "" : `<br><span class="meta until">${esc(until)}</span>`
    }${run.problem === undefined ? "" : `<br><span class="problem">${esc(run.problem)}</span>`}</td>
    <td class="num">${esc(String(run.step))}</td><td class="num">${esc(String(run.segment))}</td><td>${lease}</td>
    <td>${updated === undefined ? "—" : `<time datetime="${updated}">${esc(time(updated))}</time>`}</td>
  </tr>`;
}

function versionsLine(name: string, versions: readonly VersionRuns[]): string {
  const each = versions.map(
    ({ version, runs }) =>
      `<span data-version="${esc(String(version ?? ""))}">${version === undefined ? "no version" : `version <code>${esc(String(version))}</code>`}: ${runs} ${runs === 1 ? "run" : "runs"}</span>`,
  );
  return `<p class="versions meta" role="status">Unfinished runs of <code>${esc(name)}</code> by version: ${each.join(" · ")}</p>`;
}

const WRONG_KEY =
  '<p class="problem wrong-key" role="alert">No run verifies with this key: wrong key? Give the console the key your workers seal with (--key-file or DURABLE_KEY).</p>';
