import type { JsonValue } from "@durable/core";
import { isJsonObject, MAX_RUN_ID_LENGTH } from "@durable/core/runner";
import { type ActionContext, formStart } from "./action-forms.js";
import { badge, esc, type Frame, layout, noticeLine, type PageNotice, runHref } from "./html.js";
import type { RunDetail, StepView } from "./run-view.js";

/*
 * "Fork from this step": a new run whose history up to a step is this run's
 * (core's `forkRun`), going on from there with the flow's state as the
 * operator edited it, checked by the flow's schema. Each step of the timeline
 * that did not end the run links to its own page with the form, so a run's
 * page holds no copy of each step's state.
 */

/** Whether a fork may go on from `step`: actions are on, and the step did not end the run. */
function forkable(step: StepView, actions: ActionContext): boolean {
  return actions.allowed && step.status !== "done" && step.status !== "failed";
}

/** Where the fork form of a step is. */
function forkHref(runId: string, step: number): string {
  return `${runHref(runId)}/fork/${step}`;
}

/** The link from a step of the timeline to its fork form ("" where no fork may go on from it). */
export function forkLink(runId: string, step: StepView, actions: ActionContext): string {
  if (!forkable(step, actions)) return "";
  return ` · <a class="fork" href="${esc(forkHref(runId, step.step))}" aria-label="Fork from step ${step.step}">Fork from this step</a>`;
}

/** What the fork page knows of the flow's state: whether the console holds its schema, to check an edit. */
export interface ForkTerms {
  readonly schema: boolean;
}

/**
 * The page of a fork from `step` of `run`: the flow's state at that step to
 * edit (a loop's fork takes no edit), an optional run id, an optional reason;
 * posted as every action (the page's form token, the step it shows). A form
 * that was refused (`actions.posted`) is filled in again as posted.
 */
export function forkPage(
  frame: Frame,
  run: RunDetail,
  step: StepView,
  actions: ActionContext,
  terms: ForkTerms,
  notice?: PageNotice,
): string {
  const head = `<p><a href="${esc(runHref(run.runId))}">← ${esc(run.runId)}</a></p>
    <h1>Fork ${esc(run.runId)} from step ${step.step}</h1>
    <p class="meta">${esc(run.kind)} <code>${esc(run.name)}</code> · step ${step.step} ${badge(step.status, step.status)} · segment ${step.segment} · round ${step.round}</p>
    ${noticeLine(notice)}`;
  if (!forkable(step, actions))
    return layout(
      frame,
      `Fork ${run.runId}`,
      `${head}<p class="problem">${
        actions.allowed
          ? `Step ${step.step} ended the run (${esc(step.status)}): fork from an earlier step.`
          : "This console only reads."
      }</p>`,
    );
  const given = actions.posted?.get("action") === "fork" ? actions.posted : undefined;
  const state = given?.get("state") ?? JSON.stringify(stateOf(step.program), null, 2);
  const edit =
    run.kind === "flow"
      ? `<label for="fork-state">State at step ${step.step} (JSON)<textarea id="fork-state" name="state" rows="${Math.min(30, state.split("\n").length + 1)}" cols="80" spellcheck="false">${esc(state)}</textarea></label>
      <p class="meta">${
        terms.schema
          ? `Changed, it is checked with the schema of <code>${esc(run.name)}</code> before anything is written: it must parse to itself.`
          : `The console holds no schema for <code>${esc(run.name)}</code> (its <code>schemas</code> option): a changed state is refused, the state as it is forks.`
      }</p>`
      : `<p>A loop's fork goes on from its messages at step ${step.step} as they are.</p>`;
  const form = `${formStart(run, actions, "fork", `Fork from step ${step.step}`)}
      <input type="hidden" name="from" value="${step.step}">
      ${edit}
      <label for="fork-run-id">New run id (optional)<input id="fork-run-id" name="run-id" type="text" maxlength="${MAX_RUN_ID_LENGTH}" size="38" placeholder="a new random id" value="${esc(given?.get("run-id") ?? "")}"></label>
      <label for="fork-reason">Reason (optional)<input id="fork-reason" name="reason" type="text" maxlength="1000" value="${esc(given?.get("reason") ?? "")}"></label>
      <button type="submit">Fork the run</button></form>`;
  return layout(
    frame,
    `Fork ${run.runId}`,
    `${head}<p>A new run whose history up to step ${step.step} is this run's: its checkpoints and the calls they count,
    which replay. A worker serving <code>${esc(run.name)}</code> goes on with it from there. This run is only read.</p>
    <section class="action" aria-labelledby="act-fork"><h2 id="act-fork">Fork from this step</h2>${form}</section>`,
  );
}

/** A flow's state in its program's data (null when it holds none). */
function stateOf(program: JsonValue): JsonValue {
  return (isJsonObject(program) ? program["state"] : undefined) ?? null;
}
