import { forkRun, type OperatorOptions } from "@durable/core";
import { DurableRun, Sealer } from "@durable/core/runner";
import type { Acting, ActionOutcome } from "./acting.js";
import { editedProgram } from "./fork-state.js";
import { jsonField } from "./json-field.js";

/**
 * Forks the run from the form's step (`from`) with core's `forkRun`: a new
 * run (the form's `run-id`, or a new id) whose history up to that step is
 * the run's, going on with the flow's state as posted (`state`, JSON: checked
 * by `editedProgram`, no edit when it is the state as it was), recorded with
 * who acted and the form's `reason`. Every refusal comes before anything is
 * written. Its outcome is told on the new run's page.
 */
export async function forkTheRun(
  at: Acting,
  runId: string,
  form: URLSearchParams,
  options: OperatorOptions,
): Promise<ActionOutcome> {
  const fromStep = Number(form.get("from"));
  const edited = form.has("state")
    ? jsonField(form, "state", "leave the state as shown to fork it as it is")
    : undefined;
  const newId = form.get("run-id") ?? "";
  const reason = form.get("reason") ?? "";
  const forked = await forkRun(runId, {
    ...options,
    fromStep,
    ...(newId === "" ? {} : { runId: newId }),
    ...(reason === "" ? {} : { reason }),
    ...(edited === undefined
      ? {}
      : {
          program: async (program) => {
            // A run's name and kind are sealed in every checkpoint: its latest says them.
            const latest = await DurableRun.latest(at.store, Sealer.withKeys(at.keys, at.encryptionKey), runId);
            return editedProgram(at.schemas, latest, program, edited);
          },
        }),
  });
  return {
    text: `Forked from ${runId} at step ${fromStep}; a worker serving it goes on with it from step ${forked.step}.`,
    runId: forked.runId,
  };
}
