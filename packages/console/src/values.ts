import type { JsonValue } from "@durable/core";
import type { RunDetail } from "./run-view.js";

/*
 * The whole of a value a page cuts short (`json` prints the first
 * `SHOWN_CHARS` characters): a call's arguments or result, or the run's data
 * at a step, each at an address of its own under `/api/runs/<id>/`.
 */

/** Where a value lives in a run: a call's arguments or result, or the program's data at a step. */
export type ValuePlace = { readonly call: string; readonly part: "args" | "result" } | { readonly step: number };

/** The address of the whole value. */
export function valueHref(runId: string, place: ValuePlace): string {
  const run = `/api/runs/${encodeURIComponent(runId)}`;
  return "call" in place
    ? `${run}/calls/${encodeURIComponent(place.call)}/${place.part}`
    : `${run}/steps/${place.step}`;
}

/** The place an address's path after the run id names (`calls/<id>/args`, `steps/<n>`), or undefined. */
export function placeOf(parts: readonly string[]): ValuePlace | undefined {
  const [what, which, part] = parts;
  if (what === "calls" && which !== undefined && (part === "args" || part === "result") && parts.length === 3)
    return { call: decodeURIComponent(which), part };
  if (what === "steps" && which !== undefined && /^\d{1,9}$/.test(which) && parts.length === 2)
    return { step: Number(which) };
  return undefined;
}

/** The value at `place` in a run read whole (and verified), or undefined when the run has none there. */
export function valueAt(run: RunDetail, place: ValuePlace): JsonValue | undefined {
  if ("step" in place) return run.steps.find((step) => step.step === place.step)?.program;
  const call = run.calls.find((c) => c.callId === place.call);
  return place.part === "args" ? call?.args : call?.result;
}

/** A file name for the value's download: the run id's safe characters and the place. */
export function valueFileName(runId: string, place: ValuePlace): string {
  const run = runId.replace(/[^\w.-]/g, "_").slice(0, 80);
  const where =
    "step" in place ? `step-${place.step}` : `${place.call.replace(/[^\w.-]/g, "_").slice(0, 80)}-${place.part}`;
  return `${run}-${where}.json`;
}
