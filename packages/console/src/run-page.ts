import type { DurableEvent, JsonValue } from "@durable/core";
import type { OperatorMark } from "@durable/core/runner";
import type { CallView } from "./call-view.js";
import { conversation } from "./conversation.js";
import {
  badge,
  esc,
  type Frame,
  fromNow,
  href,
  json,
  layout,
  noticeLine,
  type PageNotice,
  runHref,
  time,
} from "./html.js";
import { actionForms, type ActionContext } from "./action-forms.js";
import { forkLink } from "./fork-page.js";
import { type RunDetail, type RunProblem, type StepView, TIMELINE_PAGE } from "./run-view.js";
import { valueHref } from "./values.js";
import type { InboxEventView, InboxView } from "./inbox-view.js";
import { type Waiting, waitingLabel, waitingUntil } from "./waiting.js";

/** A run's page: its head, the actions it allows, its calls, its loop messages, its timeline of checkpoints, its events. */
export function runPage(
  frame: Frame,
  run: RunDetail,
  actions: ActionContext,
  refreshMs: number,
  notice?: PageNotice,
): string {
  const identity =
    Object.entries(run.identity)
      .map(([k, v]) => `${esc(k)} <code>${esc(String(v))}</code>`)
      .join(", ") || "none";
  const lease =
    run.lease === undefined
      ? "none"
      : `${esc(run.lease.owner)}, ${run.lease.expiresAt > run.lease.now ? "expires" : "ran out"} ${esc(fromNow(run.lease.expiresAt, run.lease.now))}`;
  const label = run.waiting === undefined ? undefined : waitingLabel(run.waiting);
  const marks = [
    ...(run.recoveries === 0
      ? []
      : [badge("recovered", run.recoveries === 1 ? "recovered" : `recovered ×${run.recoveries}`)]),
    ...(label === undefined ? [] : [badge(label.replaceAll(" ", "-"), label)]),
    ...(run.cancelled ? [badge("cancelled", "cancelled")] : []),
  ].join("");
  const body = `<p><a href="/">← all runs</a></p>
    <h1>${esc(run.runId)} ${badge(run.status, run.status)}${marks}</h1>
    <p class="meta">${esc(run.kind)} <code>${esc(run.name)}</code>${
      run.version === undefined ? "" : ` · version <code class="version">${esc(String(run.version))}</code>`
    } · step ${run.step} · segment ${run.segment} · lease ${lease} · identity ${identity}</p>
    ${
      run.forkedFrom === undefined
        ? ""
        : `<p class="forked-from">Forked from <a href="${esc(runHref(run.forkedFrom.runId))}">${esc(run.forkedFrom.runId)}</a> at step ${run.forkedFrom.step}.</p>`
    }
    <p id="run-changed" class="changed" role="status" hidden>This run changed since the page was loaded (now <span data-now></span>): its actions below would be refused. <a href="${esc(runHref(run.runId))}">Reload</a></p>
    ${noticeLine(notice)}
    ${run.waiting === undefined ? "" : `<p class="waits" data-waits-for="${esc(run.waiting.for)}">${waitsText(run)}</p>`}
    ${run.error === undefined ? "" : `<p class="problem">${esc(run.error)}</p>`}
    ${actionForms(run, actions)}
    <h2 id="calls">Calls</h2>
    ${run.calls.length === 0 ? "<p>No call recorded.</p>" : callTable(run.runId, callsShown(run), run.calls.length)}
    ${run.inbox === undefined || (run.inbox.events.length === 0 && run.waiting?.for !== "event") ? "" : inboxTable(run.inbox)}
    ${run.messages === undefined ? "" : conversation(run.messages, valueHref(run.runId, { step: run.step }))}
    <h2 id="timeline">Timeline</h2>
    <p class="meta">Every checkpoint, oldest first, with what its step changed in the run's data.</p>
    ${timelinePager(run)}${run.steps.map((step) => stepBlock(run.runId, step, actions)).join("")}
    ${run.events.length === 0 ? "" : eventTable(run.events, run.skippedEventLines ?? 0)}`;
  return layout(frame, run.runId, body, {
    "run-id": run.runId,
    step: String(run.step),
    "refresh-ms": String(refreshMs),
  });
}

/** A run that could not be read (a signature that does not verify: the wrong key?). */
export function problemPage(frame: Frame, problem: RunProblem): string {
  const hint =
    problem.code === "CHECKPOINT_STORE_CORRUPT"
      ? " If no run verifies, the console has another key than the workers: give it theirs (--key-file or DURABLE_KEY)."
      : "";
  return layout(
    frame,
    problem.runId,
    `<p><a href="/">← all runs</a></p><h1>${esc(problem.runId)} ${badge("unreadable", "unreadable")}</h1>
    <p class="problem" role="alert">${esc(problem.problem)}${esc(hint)}</p>`,
  );
}

/** No run of that id. */
export function notFoundPage(frame: Frame, runId: string): string {
  return layout(
    frame,
    "Not found",
    `<p><a href="/">← all runs</a></p><h1>No run ${esc(runId)}</h1><p>The store holds nothing for this run id.</p>`,
  );
}

/** The calls of the rounds the timeline's page shows: a long run's page holds its newest calls, the rest on older pages. */
function callsShown(run: RunDetail): readonly CallView[] {
  if (run.steps.length === run.timeline.total) return run.calls;
  const first = run.steps[0]?.round ?? 0;
  const last = run.steps.at(-1)?.round ?? 0;
  return run.calls.filter((call) => call.round >= first && call.round <= last);
}

function callTable(runId: string, calls: readonly CallView[], total: number): string {
  const rows = calls.map((call) => {
    const failures = call.failures
      .map((f) => `<p class="problem failure">attempt ${f.attempt} failed: ${esc(f.error)}</p>`)
      .join("");
    const outcome =
      call.error !== undefined
        ? `<p class="problem">${esc(call.error)}</p>`
        : call.result === undefined
          ? failures === ""
            ? "—"
            : ""
          : json(call.result, valueHref(runId, { call: call.callId, part: "result" }));
    const decided =
      call.decided === undefined
        ? ""
        : `<br><span class="meta">decided ${esc(call.decided.decision)} by ${esc(call.decided.by)} at ${esc(time(call.decided.at))}</span>`;
    const durations = call.durationsMs.length === 0 ? "—" : call.durationsMs.map((ms) => `${ms} ms`).join(", ");
    return `<tr data-call-id="${esc(call.callId)}" data-state="${esc(call.state)}" data-marks="${esc(call.marks.join(" "))}">
      <th scope="row"><code>${esc(call.tool)}</code><br><span class="meta">round ${call.round}</span></th>
      <td>${badge(call.state.replaceAll(" ", "-"), call.state)}${call.marks.map((m) => badge(m.replaceAll(" ", "-"), m)).join("")}${
        call.inDoubt === undefined ? "" : `<br><span class="meta">${esc(call.inDoubt)}</span>`
      }${decided}</td>
      <td class="num">${call.attempts}</td><td>${esc(durations)}</td>
      <td>${json(call.args, valueHref(runId, { call: call.callId, part: "args" }))}</td><td>${failures}${outcome}</td>
      <td><code>${esc(call.callId)}</code><br><span class="meta">key</span> <code>${esc(call.idempotencyKey)}</code><br>
        <span class="meta">records ${esc(call.records.map((r) => `${r.segment}:${r.seq} ${r.kind}`).join(", "))}</span></td>
    </tr>`;
  });
  const caption =
    calls.length === total
      ? "Every call, in the order it was first recorded"
      : `The ${calls.length} calls of the steps shown below (of ${total}), in the order they were first recorded`;
  return `<table class="calls"><caption>${caption}</caption><thead><tr>
    <th scope="col">tool</th><th scope="col">what happened</th><th scope="col">attempts</th><th scope="col">durations</th>
    <th scope="col">arguments</th><th scope="col">result or error</th><th scope="col">call id, idempotency key, records</th>
  </tr></thead><tbody>${rows.join("")}</tbody></table>
  <p class="meta">in doubt: it started and no outcome is stored · ran: its tool started · replayed: its outcome came from the log after a crash · rerun: it ran again in a later segment · decided: an operator decided it · reopened: a retry ran it again.</p>`;
}

/** Which steps the timeline shows, and links to the pages before and after: a long run opens on its newest steps. */
function timelinePager(run: RunDetail): string {
  const { total, first, last } = run.timeline;
  if (run.steps.length === total) return "";
  const page = (before: number, text: string, rel: string) =>
    `<a href="${esc(href(runHref(run.runId), { before: String(before) }))}#timeline" rel="${rel}">${text}</a>`;
  const older = first > 0 ? page(first, "Older steps", "prev") : "";
  const newer = last < run.step ? page(last + 1 + TIMELINE_PAGE, "Newer steps", "next") : "";
  return `<nav class="pager" aria-label="Timeline pages"><span>Steps ${first} to ${last} of ${total}</span>${older}${newer}</nav>`;
}

/** What the run waits for, in a sentence, with what an operator can do about it. */
function waitsText(run: RunDetail): string {
  const waiting = run.waiting as Waiting;
  const calls = (ids: readonly string[]) =>
    ids.map((id) => `<code>${esc(run.calls.find((call) => call.callId === id)?.tool ?? id)}</code>`).join(", ");
  switch (waiting.for) {
    case "approval":
      return `Waits for an approval of ${calls(waiting.calls)}: answer below, or resume it with answers.`;
    case "decision":
      return `Waits for a decision on ${calls(waiting.calls)}: started, no outcome stored, and no worker holds the run.`;
    case "next message":
      return "Waits for the next user message of the conversation.";
    case "resume":
      return "Waits for someone to resume it.";
    case "retry time":
      return `Waits to retry a failed call: its next attempt starts ${esc(time(waiting.at))}.`;
    case "wake time":
      return `Asleep: it holds no worker, and a worker serving it wakes it ${esc(time(waiting.until))}.`;
    case "event":
      return `${esc(capitalized(waitingUntil(waiting) ?? ""))}: it holds no worker, and the next event sent releases it to one${
        waiting.until === undefined ? "" : "; then its wait times out"
      }.`;
    case "worker":
      return run.version === undefined
        ? "Waits for a worker: nobody holds it, and the next worker serving it claims it."
        : `Waiting for a worker of version <code>${esc(String(run.version))}</code>: nobody holds it, and the next worker of that version serving it claims it.`;
  }
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The events sent to the run, oldest first, and which a wait took. */
function inboxTable(inbox: InboxView): string {
  if (inbox.events.length === 0) return `<h2 id="inbox">Inbox</h2><p>No event sent yet.</p>`;
  const rows = inbox.events.map(inboxRow);
  const caption = inbox.withheld
    ? "Events sent to it, oldest first: encrypted, and the console has no encryption key to show them"
    : "Events sent to it, oldest first: a wait takes the earliest of its name that no wait took";
  return `<h2 id="inbox">Inbox</h2><table class="inbox"><caption>${caption}</caption><thead><tr>
    <th scope="col">seq</th><th scope="col">name</th><th scope="col">idempotency key</th><th scope="col">sent</th>
    <th scope="col">taken by a wait</th><th scope="col">payload</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function inboxRow(event: InboxEventView): string {
  const { seq, name, key, at, taken, payload } = event;
  return `<tr data-seq="${seq}"><td class="num">${seq}</td><td>${name === undefined ? "withheld" : `<code>${esc(name)}</code>`}</td>
    <td><code>${esc(key)}</code></td><td>${at === undefined ? "—" : esc(time(at))}</td>
    <td>${taken === undefined ? "—" : taken ? "taken" : "not yet"}</td><td>${payload === undefined ? "withheld" : json(payload)}</td></tr>`;
}

/** What an operator's action at a step did, in words: an approval's answers say whether they approved or denied. */
function actionText(step: StepView, mark: OperatorMark): string {
  if (mark.action === "fork") return `forked by ${mark.by}`;
  if (mark.action !== "approve") return `${mark.action} by ${mark.by}`;
  const approved = step.answers.filter((answer) => answer.approved).length;
  const verb = approved === step.answers.length ? "approved" : approved === 0 ? "denied" : "answered";
  return `${verb} by ${mark.by}`;
}

function stepBlock(runId: string, step: StepView, actions: ActionContext): string {
  const data = valueHref(runId, { step: step.step });
  const before = step.step === 0 ? undefined : valueHref(runId, { step: step.step - 1 });
  const marks = [
    step.recovery ? badge("recovered", "recovery") : step.claim ? badge("claim", "claim") : "",
    step.operator === undefined ? "" : badge("operator", actionText(step, step.operator)),
  ].join("");
  const changes =
    step.changes.length === 0
      ? "<p>No change to the run's data.</p>"
      : `<table class="changes"><caption>Changes from the step before</caption><thead><tr><th scope="col">path</th><th scope="col">before</th><th scope="col">after</th></tr></thead><tbody>${step.changes
          .map(
            (c) =>
              `<tr><th scope="row"><code>${esc(c.path)}</code></th><td>${json(c.before, before)}</td><td>${json(c.after, data)}</td></tr>`,
          )
          .join("")}</tbody></table>`;
  const extra = [
    step.pending.length === 0
      ? ""
      : `<p>Waiting on: ${step.pending.map((p) => `<code>${esc(p.tool)}</code>`).join(", ")}</p>`,
    step.answers.length === 0
      ? ""
      : `<p>Answers stored: ${step.answers.map((d) => `${esc(d.callId)} ${d.approved ? "approved" : "denied"}${d.reason === undefined ? "" : ` (${esc(d.reason)})`}`).join("; ")}</p>`,
    step.error === undefined ? "" : `<p class="problem">${esc(step.error)}</p>`,
    step.operator?.reason === undefined ? "" : `<p>Reason: ${esc(step.operator.reason)}</p>`,
  ].join("");
  return `<details class="step" data-step="${step.step}"${step.changes.length > 0 && step.step > 0 ? " open" : ""}>
    <summary>step ${step.step} ${badge(step.status, step.status)}${marks} · segment ${step.segment} · round ${step.round}${
      step.at === undefined ? "" : ` · saved ${esc(time(step.at))}`
    }${step.operator === undefined ? "" : ` · ${esc(time(step.operator.at))}`}${forkLink(runId, step, actions)}</summary>
    ${extra}${changes}<details><summary>Data at this step</summary>${json(step.program, data)}</details>
  </details>`;
}

function eventTable(events: readonly DurableEvent[], skipped: number): string {
  const rows = events.map(
    (e) => `<tr><td>${esc(time(e.at))}</td><td><code>${esc(e.type)}</code></td><td>${json(eventDetails(e))}</td></tr>`,
  );
  return `<h2 id="events">Events</h2><table class="events"><caption>From the event log${skipped === 0 ? "" : ` (${skipped} of its lines are not events: skipped)`}</caption><thead><tr><th scope="col">at</th><th scope="col">event</th><th scope="col">details</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** An event without what every row already shows. */
function eventDetails(event: DurableEvent): JsonValue {
  const { type: _type, at: _at, runId: _runId, kind: _kind, ...rest } = event;
  return JSON.parse(JSON.stringify(rest)) as JsonValue;
}
