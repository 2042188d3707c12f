import {
  approveRun,
  type InDoubtDecision,
  cancelRun,
  type CheckpointKeys,
  type CheckpointStore,
  decideInDoubt,
  type ApprovalAnswers,
  type EncryptionKeys,
  InvalidInput,
  type OperatorOptions,
  retryRun,
  sendEvent,
  wakeRun,
} from "@durable/core";

/** Where the console records actions, and as whom. */
export interface Acting {
  readonly store: CheckpointStore;
  readonly keys: CheckpointKeys;
  readonly encryptionKey: EncryptionKeys | undefined;
  /** Who acts: recorded with every action. */
  readonly by: string;
}

/**
 * Records one action posted by a run's page, through core's operator API
 * (only the store and the key: the worker serving the run acts on it), bound
 * to the step the page showed; an event is sent whatever the step (its key
 * makes a resend a no-op). Returns what to tell the operator. A form it
 * cannot read is `InvalidInput`; a run that moved on is `CheckpointConflict`.
 */
export async function recordAction(at: Acting, runId: string, form: URLSearchParams): Promise<string> {
  if (form.get("action") === "send-event") return sendTheEvent(at, runId, form);
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

/** A form field that holds JSON, parsed: `InvalidInput` naming it when it is not JSON. */
function jsonField(form: URLSearchParams, field: string): unknown {
  const text = form.get(field) ?? "";
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new InvalidInput(
      `The ${field} is not JSON: ${text.trim() === "" ? "it is empty (null for none)" : text.slice(0, 80)}`,
    );
  }
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
