import { randomUUID } from "node:crypto";
import { isAsleepOwner, MAX_EVENT_KEY_LENGTH } from "@durable/core/store";
import { MAX_NAME_LENGTH } from "@durable/core/runner";
import { badge, esc, json, runHref } from "./html.js";
import type { RunDetail } from "./run-view.js";
import { valueHref } from "./values.js";

/** Whether the console takes actions, and the form token that proves a post came from its own page. */
export interface ActionContext {
  readonly allowed: boolean;
  readonly csrf: string;
  /** The form of a post just refused: its fields are filled in again, so nothing typed is lost. */
  readonly posted?: URLSearchParams;
}

/**
 * The forms of the actions a run allows now, each bound to the step the page
 * shows (the action is refused once the run moved on): approve or deny its
 * pending calls, decide its calls in doubt (as `waitingFor` says), retry it
 * (failed, not cancelled, not on a denial), wake it (asleep, or waiting for
 * an event with a timeout), cancel it (not ended), send it an
 * event (not ended, on a store with the events capability: not bound to a
 * step, a new idempotency key per page makes a second submit a no-op).
 * Nothing when the console was started without `--allow-actions`.
 */
export function actionForms(run: RunDetail, actions: ActionContext): string {
  if (!actions.allowed) return "";
  const sections: string[] = [];
  const start = (action: string, label: string) => formStart(run, actions, action, label);
  if (run.waiting?.for === "approval") {
    const calls = run.pending.map(
      (
        call,
        i,
      ) => `<fieldset class="check"><legend><code>${esc(call.tool)}</code> <span class="meta">${esc(call.callId)}</span></legend>
        <input type="hidden" name="call.${i}" value="${esc(call.callId)}">${json(call.args, valueHref(run.runId, { call: call.callId, part: "args" }))}
        <label><input type="radio" name="approve.${i}" value="approve"> Approve</label>
        <label><input type="radio" name="approve.${i}" value="deny"> Deny</label>
        <label><input type="radio" name="approve.${i}" value="" checked> Leave pending</label>
        <label for="reason-${i}">Reason<input id="reason-${i}" name="reason.${i}" type="text" maxlength="1000"></label>
      </fieldset>`,
    );
    sections.push(
      `<section class="action" aria-labelledby="act-approve"><h3 id="act-approve">Approvals</h3>${start("approve", "Approvals")}${calls.join("")}<button type="submit">Record answers</button></form></section>`,
    );
  }
  if (run.waiting?.for === "decision") {
    const forms = run.inDoubt.map(
      (call, i) => `${start("decide", `Decide ${call.tool}`)}
        <input type="hidden" name="call" value="${esc(call.callId)}">
        <p><code>${esc(call.tool)}</code> ${badge("in-doubt", "in doubt")} ${esc(call.why)}; check it at its system by its idempotency key <code>${esc(call.idempotencyKey)}</code>.</p>
        <label for="decision-${i}">Decision<select id="decision-${i}" name="decision" data-decision>
          <option value="rerun">Run it again</option><option value="result">It happened, with this result</option>
          <option value="skip">It did not happen: skip it</option><option value="error">It failed, with this error</option>
        </select></label>
        <label for="result-${i}" data-for="result">Result (JSON)<textarea id="result-${i}" name="result" rows="3" cols="40">null</textarea></label>
        <label for="error-${i}" data-for="error">Error<input id="error-${i}" name="error" type="text" maxlength="2000"></label>
        <button type="submit">Record decision</button></form>`,
    );
    sections.push(
      `<section class="action" aria-labelledby="act-decide"><h3 id="act-decide">Calls in doubt</h3>${forms.join("")}</section>`,
    );
  }
  if (run.status === "failed" && !run.cancelled && failedOnDenial(run))
    sections.push(
      `<section class="action" aria-labelledby="act-retry"><h3 id="act-retry">Retry</h3>
        <p>It failed because an approval was denied: the denial is recorded, so a retry would meet it again and fail. Start a new run to ask again.</p></section>`,
    );
  else if (run.status === "failed" && !run.cancelled)
    sections.push(
      `<section class="action" aria-labelledby="act-retry"><h3 id="act-retry">Retry</h3>${start("retry", "Retry")}
        <p>The worker serving <code>${esc(run.name)}</code> goes on with it: calls its tools' errors ended run again, finished calls replay.</p>
        <button type="submit">Retry the run</button></form></section>`,
    );
  const asleep = run.waiting?.for === "wake time" || (run.waiting?.for === "event" && run.waiting.until !== undefined);
  if (asleep)
    sections.push(
      `<section class="action" aria-labelledby="act-wake"><h3 id="act-wake">Wake now</h3>${start("wake", "Wake now")}
        <p>The worker serving <code>${esc(run.name)}</code> goes on with it now: its sleeps so far are over, and a wait for an event times out.</p>
        <button type="submit">Wake the run</button></form></section>`,
    );
  // Refused, the event's form stays, also for a run that ended meanwhile: what the operator typed is not lost.
  const refusedEvent = actions.posted?.get("action") === "send-event" ? actions.posted : undefined;
  if ((refusedEvent !== undefined || (run.status !== "done" && run.status !== "failed")) && run.inbox !== undefined)
    sections.push(sendEventForm(run, start("send-event", "Send an event"), refusedEvent));
  if (run.status !== "done" && run.status !== "failed")
    sections.push(
      `<section class="action" aria-labelledby="act-cancel"><h3 id="act-cancel">Cancel</h3>${start("cancel", "Cancel")}
        <label for="cancel-reason">Reason<input id="cancel-reason" name="reason" type="text" required maxlength="1000"></label>
        <button type="submit" class="danger">Cancel the run</button></form>${
          run.lease !== undefined && run.lease.expiresAt > run.lease.now && !isAsleepOwner(run.lease.owner)
            ? `<p class="meta">A worker holds it (${esc(run.lease?.owner ?? "")}): it is fenced at its next write.</p>`
            : ""
        }</section>`,
    );
  return sections.length === 0 ? "" : `<h2 id="actions">Actions</h2>${sections.join("")}`;
}

/**
 * The opening of an action's form, posted to the run's actions with the page's form token and the step the
 * page shows (the action is refused once the run moved on): `action` names it, `label` names the form.
 */
export function formStart(run: RunDetail, actions: ActionContext, action: string, label: string): string {
  return `<form method="post" action="${esc(runHref(run.runId))}/actions" aria-label="${esc(label)}">
      <input type="hidden" name="csrf" value="${esc(actions.csrf)}"><input type="hidden" name="step" value="${run.step}">
      <input type="hidden" name="action" value="${action}">`;
}

/** The event form: its name is the first the run waits for, its key a new one, unless a refused post (`given`) gave them. */
function sendEventForm(run: RunDetail, start: string, given: URLSearchParams | undefined): string {
  const name = given?.get("name") ?? (run.waiting?.for === "event" ? (run.waiting.names[0] ?? "") : "");
  const payload = given?.get("payload") ?? "null";
  const key = given?.get("key") ?? randomUUID();
  return `<section class="action" aria-labelledby="act-event"><h3 id="act-event">Send an event</h3>${start}
      <label for="event-name">Event name<input id="event-name" name="name" type="text" required maxlength="${MAX_NAME_LENGTH}" value="${esc(name)}"></label>
      <label for="event-payload">Payload (JSON)<textarea id="event-payload" name="payload" rows="3" cols="40">${esc(payload)}</textarea></label>
      <label for="event-key">Idempotency key<input id="event-key" name="key" type="text" required maxlength="${MAX_EVENT_KEY_LENGTH}" size="38" value="${esc(key)}"></label>
      <button type="submit">Send the event</button></form>
      <p class="meta">Into its inbox, where its next wait for that name takes it. Sent again with the same key, it is a no-op.</p></section>`;
}

/** A run whose last round holds a denied call failed on the denial: a retry replays it and fails again. */
function failedOnDenial(run: RunDetail): boolean {
  const round = run.steps.at(-1)?.round;
  return run.calls.some((call) => call.state === "denied" && call.round === round);
}
