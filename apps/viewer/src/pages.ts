import type { DurableEvent } from "@durable/core";
import { noRunVerifies, type CallView, type RunView } from "./runs.js";

/** The page of every run: id, flow, status, step, segment, and a mark for runs a recovery took over. */
export function runsPage(store: string, runs: readonly RunView[]): string {
  const rows = runs.map(
    (run) => `<tr data-run-id="${esc(run.runId)}">
      <td><a href="/runs/${encodeURIComponent(run.runId)}">${esc(run.runId)}</a>${marks(run)}</td>
      <td>${esc(run.flow)}</td><td>${esc(run.kind)}</td><td>${badge(run.status, run.status)}</td>
      <td class="num">${run.step ?? "–"}</td><td class="num">${run.segment ?? "–"}</td>
      <td class="num">${run.calls.length}</td><td>${esc(time(run.lastAt))}</td>
    </tr>`,
  );
  const recovered = runs.filter((r) => r.recovered).length;
  return layout(
    "Runs",
    `${noRunVerifies(runs) ? WRONG_KEY : ""}<h1>Runs</h1>
    <p class="meta">${runs.length} run(s) in <code>${esc(store)}</code>; ${recovered} recovered by another worker.</p>
    ${
      runs.length === 0
        ? "<p>No run in the event log yet: run <code>pnpm demo</code>, or point <code>--events</code> at the JSON Lines file your workers write.</p>"
        : `<table class="runs"><thead><tr><th>run</th><th>flow</th><th>kind</th><th>status</th><th>step</th><th>segment</th><th>calls</th><th>last event</th></tr></thead>
      <tbody>${rows.join("")}</tbody></table>`
    }`,
  );
}

const WRONG_KEY =
  '<p class="problem wrong-key">No run verifies with this key: wrong key? Give the viewer the key your workers seal with: --key, --key-file or DURABLE_KEY (the demo\'s runs: --demo).</p>';

/** One run: its identity, its steps over time, its calls marked, its events. */
export function runPage(run: RunView): string {
  const identity =
    run.identity === undefined
      ? "–"
      : Object.entries(run.identity)
          .map(([k, v]) => `${esc(k)}: <code>${esc(String(v))}</code>`)
          .join(", ") || "none";
  const steps = run.steps.map(
    (s) =>
      `<tr><td class="num">${s.step}</td><td>${badge(s.status, s.status)}${s.claim ? ` ${badge("recovered", "claimed by a recovery")}` : ""}${
        s.needsDecision ? ` ${badge("needs-decision", "claimed, stopped for a decision")}` : ""
      }</td><td>${esc(s.stage ?? "")}</td><td>${esc(time(s.at))}</td></tr>`,
  );
  return layout(
    run.runId,
    `<p><a href="/">← all runs</a></p>
    <h1>${esc(run.runId)} ${badge(run.status, run.status)}${marks(run)}</h1>
    <p class="meta">${esc(run.kind)} <code>${esc(run.flow)}</code> · step ${run.step ?? "–"} · segment ${run.segment ?? "–"} · identity ${identity}</p>
    ${run.problem === undefined ? "" : `<p class="problem">${esc(run.problem)}</p>`}
    <h2>Calls</h2>
    ${run.calls.length === 0 ? "<p>No call recorded.</p>" : callTable(run.calls)}
    <h2>Steps</h2>
    <table><thead><tr><th>step</th><th>status</th><th>stage</th><th>saved</th></tr></thead><tbody>${steps.join("")}</tbody></table>
    <h2>Events</h2>
    <table class="events"><thead><tr><th>at</th><th>event</th><th>details</th></tr></thead><tbody>${run.events.map(eventRow).join("")}</tbody></table>`,
  );
}

/** The badges after a run's id: taken over by a recovery, waiting on a decision on calls in doubt. */
function marks(run: RunView): string {
  return `${run.recovered ? ` ${badge("recovered", "recovered")}` : ""}${run.needsDecision ? ` ${badge("needs-decision", "needs decision")}` : ""}`;
}

function callTable(calls: readonly CallView[]): string {
  const rows = calls.map(
    (c) => `<tr data-call-id="${esc(c.callId)}" data-mark="${esc(c.mark)}">
      <td><code>${esc(c.tool)}</code></td><td>${badge(c.mark.replaceAll(" ", "-"), c.mark)}</td>
      <td><code>${esc(c.callId)}</code></td><td>${esc(c.records.join(", "))}</td><td>${esc(c.error !== undefined ? `error: ${c.error}` : c.result === undefined ? "" : JSON.stringify(c.result))}</td>
    </tr>`,
  );
  return `<table class="calls"><thead><tr><th>tool</th><th>what happened</th><th>call id</th><th>records (segment:kind)</th><th>result</th></tr></thead><tbody>${rows.join("")}</tbody></table>
  <p class="legend">${badge("ran", "ran")} ran once · ${badge("tool-error", "tool error")} its tool threw; the error is recorded and replays · ${badge("replayed", "replayed")} its result came from the log · ${badge("rerun", "rerun")} was in doubt and ran again · ${badge("retrying", "retrying")} an attempt failed; the next follows its wait · ${badge("decided", "decided")} was in doubt; an operator decided it · ${badge("in-doubt", "in doubt")} started, no result: recovery waits for a decision</p>`;
}

function eventRow(e: DurableEvent): string {
  return `<tr><td>${esc(time(e.at))}</td><td><code>${esc(e.type)}</code></td><td>${esc(eventDetails(e))}</td></tr>`;
}

function eventDetails(e: DurableEvent): string {
  const calls = (list: ReadonlyArray<{ tool: string }>) => list.map((c) => c.tool).join(", ") || "none";
  switch (e.type) {
    case "checkpoint.saved":
      return `step ${e.step}, ${e.status}${e.stage === undefined ? "" : `, ${e.stage}`}`;
    case "run.recovered":
      // Event logs written before leases name no owner.
      // Event logs written before decisions name none.
      return `claimed at step ${e.step}${e.owner === undefined ? "" : ` by worker ${e.owner}`}; replays from the log: ${calls(e.replayed)}; runs again: ${calls(e.rerun)}${e.decided === undefined || e.decided.length === 0 ? "" : `; decided by an operator: ${calls(e.decided)}`}`;
    case "run.needs-decision":
      return `claimed at step ${e.step}; stopped, in doubt: ${e.calls.map((c) => `${c.tool} (${c.why}; idempotency key ${c.idempotencyKey})`).join(", ")}`;
    case "call.started":
    case "call.done":
      // Event logs written before retries name no attempt.
      return `${e.call.tool} (${e.call.callId})${(e.attempt ?? 1) > 1 ? `, attempt ${e.attempt}` : ""}`;
    case "call.retrying":
      return `${e.call.tool} (${e.call.callId}): attempt ${e.attempt} failed: ${e.error}; next in ${e.delayMs} ms`;
    case "call.failed":
      return `${e.call.tool} (${e.call.callId}): ${e.error}`;
    case "run.paused":
      return `step ${e.step}; waiting on ${calls(e.approvals)}`;
    case "run.done":
    case "run.failed":
      return `step ${e.step}${e.error === undefined ? "" : `: ${e.error}`}`;
    case "run.cancelled":
      return `step ${e.step}: ${e.reason}`;
  }
}

export function notFoundPage(runId: string): string {
  return layout(
    "Not found",
    `<p><a href="/">← all runs</a></p><h1>No run ${esc(runId)}</h1><p>The event log names no such run.</p>`,
  );
}

function badge(kind: string, text: string): string {
  return `<span class="badge ${esc(kind)}">${esc(text)}</span>`;
}

function time(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)} · @durable runs</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 8px 0; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #5b6475; } code { font: 12px ui-monospace, monospace; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #e1e4ea; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eceef2; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; font-size: 12px; color: #4a5262; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: #2457c5; text-decoration: none; } a:hover { text-decoration: underline; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e6e8ed; color: #384152; }
.badge.done, .badge.ran { background: #e3f4e8; color: #1c6b35; }
.badge.running { background: #fff3d6; color: #8a5a00; }
.badge.paused, .badge.waiting-on-approval { background: #efe6fb; color: #5b2ea6; }
.badge.failed, .badge.unreadable, .badge.in-doubt, .badge.tool-error { background: #fde4e4; color: #a32020; }
.badge.needs-decision { background: #fff3d6; color: #8a5a00; border: 1px solid #e0b44c; }
.badge.recovered, .badge.replayed { background: #e2ecfd; color: #1f4fae; }
.badge.rerun { background: #ffe9d9; color: #a4480c; }
.problem { background: #fde4e4; color: #a32020; padding: 8px 12px; border-radius: 6px; }
.legend { color: #5b6475; font-size: 12px; }
`;
