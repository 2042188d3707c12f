import {
  approveRun,
  type InDoubtDecision,
  cancelRun,
  decideInDoubt,
  type ApprovalAnswers,
  InvalidInput,
  type OperatorOptions,
  retryRun,
  sendEvent,
  wakeRun,
} from "@durable/core";
import type { Acting, ActionOutcome } from "./acting.js";
import { forkTheRun } from "./fork-action.js";
import { jsonField } from "./json-field.js";

/**
 * Records one action posted by a run's page, through core's operator API
 * (only the store and the key: the worker serving the run acts on it), bound
 * to the step the page showed; an event is sent whatever the step (its key
 * makes a resend a no-op). Returns what to tell the operator, and on which
 * run's page (a fork's is the new run's). A form it cannot read is
 * `InvalidInput`; a run that moved on is `CheckpointConflict`.
 */
export async function recordAction(at: Acting, runId: string, form: URLSearchParams): Promise<ActionOutcome> {
  if (form.get("action") === "send-event") return { text: await sendTheEvent(at, runId, form), runId };
  const text = await recordOnRun(at, runId, form);
  return typeof text === "string" ? { text, runId } : text;
}

/** An action bound to the step the page showed: what to tell the operator (a fork's outcome with its new run). */
async function recordOnRun(at: Acting, runId: string, form: URLSearchParams): Promise<string | ActionOutcome> {
  const step = Number(form.get("step"));
  if (!Number.isSafeInteger(step) || step < 0) throw new InvalidInput("The form names no step: reload the run's page.");
  const options: OperatorOptions = {
    checkpoints: at.store,
    checkpointKey: at.keys,
    ...(at.encryptionKey === undefined ? {} : { encryptionKey: at.encryptionKey }),
    by: at.by,
    expectStep: step,
  };
  switch (form.get("action")) {
    case "approve": {
      const answers = approvals(form);
      if (Object.keys(answers).length === 0) throw new InvalidInput("Approve or deny at least one call.");
      const saved = await approveRun(runId, answers, options);
      return `Recorded ${Object.keys(answers).length} answer(s) at step ${saved}; the worker serving the run spends them.`;
    }
    case "decide": {
      const callId = form.get("call") ?? "";
      const decided = await decideInDoubt(runId, { [callId]: callDecision(form) }, options);
      return decided.length === 0
        ? "The call finished meanwhile: it keeps its outcome, and nothing was recorded."
        : "Decision recorded; the worker serving the run acts on it.";
    }
    case "retry": {
      const saved = await retryRun(runId, options);
      return `Retry recorded at step ${saved}; the worker serving the run goes on with it.`;
    }
    case "wake": {
      const saved = await wakeRun(runId, options);
      return `Woken at step ${saved}; the worker serving the run goes on with it now.`;
    }
    case "cancel": {
      const saved = await cancelRun(runId, form.get("reason") ?? "", options);
      return `Cancelled at step ${saved}.`;
    }
    case "fork":
      return forkTheRun(at, runId, form, options);
    default:
      throw new InvalidInput("Unknown action: reload the run's page.");
  }
}

/** Sends the form's event with `sendEvent` (nothing else is recorded): says at which place of the inbox, or that it was there. */
async function sendTheEvent(at: Acting, runId: string, form: URLSearchParams): Promise<string> {
  const name = form.get("name") ?? "";
  const sent = await sendEvent({
    checkpoints: at.store,
    checkpointKey: at.keys,
    ...(at.encryptionKey === undefined ? {} : { encryptionKey: at.encryptionKey }),
    runId,
    name,
    payload: jsonField(form, "payload"),
    idempotencyKey: form.get("key") ?? "",
  });
  return sent.status === "sent"
    ? `Sent event ${JSON.stringify(name)} as seq ${sent.seq}; the run's next wait for it takes it.`
    : `Duplicate: the inbox holds an event with key ${JSON.stringify(sent.key)} already, and nothing was sent.`;
}

/** The approve/deny choices of the form: `call.<i>`, `approve.<i>` and `reason.<i>` for each pending call. */
function approvals(form: URLSearchParams): ApprovalAnswers {
  const answers: Record<string, { approved: boolean; reason?: string }> = {};
  for (const [name, callId] of form) {
    const index = /^call\.(\d+)$/.exec(name)?.[1];
    if (index === undefined) continue;
    const choice = form.get(`approve.${index}`);
    if (choice !== "approve" && choice !== "deny") continue;
    const reason = form.get(`reason.${index}`) ?? "";
    answers[callId] = { approved: choice === "approve", ...(reason === "" ? {} : { reason }) };
  }
  return answers;
}

function callDecision(form: URLSearchParams): InDoubtDecision {
  switch (form.get("decision")) {
    case "rerun":
      return "rerun";
    case "skip":
      return "skip";
    case "error":
      return { error: form.get("error") ?? "" };
    case "result":
      return { result: jsonField(form, "result") };
    default:
      throw new InvalidInput('A decision is "rerun", "result", "skip" or "error".');
  }
}
