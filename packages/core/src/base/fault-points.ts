/**
 * Fault points: named places in the runner and the executor where a test can
 * make the worker die with SIGKILL, to prove recovery from each of them.
 *
 * Off unless the process starts with `DURABLE_FAULT_POINT` set; when off, a
 * fault point is one comparison of a constant. The variable names the point and
 * which time it is reached kills (`call.after-started@3`: the third time), or is
 * `trace`, which prints `durable-fault-point <point>` to stderr at each one.
 */

/** Every fault point, in the order a call and a save reach them. */
export const FAULT_POINTS = [
  "call.before-started",
  "call.after-started",
  "tool.inside",
  "call.after-failed",
  "call.before-done",
  "call.after-done",
  "checkpoint.before-save",
  "checkpoint.after-save",
  "claim.before-log-read",
  "resume.before-answers-save",
  "resume.after-answers-save",
  "model.before-call",
  "model.inside",
] as const;

/** A named place where a test may kill the worker. */
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** The environment variable that arms a fault point. */
export const FAULT_POINT_VARIABLE = "DURABLE_FAULT_POINT";

/** What `DURABLE_FAULT_POINT` asks for. */
export type ArmedFaultPoint =
  | { readonly trace: true }
  | { readonly trace: false; readonly point: FaultPoint; readonly hit: number };

const armed: ArmedFaultPoint | undefined = parseFaultPoint(globalThis.process?.env?.[FAULT_POINT_VARIABLE]);
let reached = 0;

/**
 * Marks a fault point. A no-op unless `DURABLE_FAULT_POINT` armed it; tools
 * under test may call `faultPoint("tool.inside")` after their side effect.
 */
export function faultPoint(point: FaultPoint): void {
  if (armed === undefined) return;
  if (armed.trace) {
    process.stderr.write(`durable-fault-point ${point}\n`);
    return;
  }
  if (point !== armed.point || ++reached < armed.hit) return;
  process.kill(process.pid, "SIGKILL");
}

/** Reads the variable's value: undefined when it is unset or empty; a `TypeError` when it names no point. */
export function parseFaultPoint(value: string | undefined): ArmedFaultPoint | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "trace") return { trace: true };
  const [point, hit = "1"] = value.split("@") as [string, string | undefined];
  if (!(FAULT_POINTS as readonly string[]).includes(point) || !/^[1-9][0-9]*$/.test(hit)) {
    throw new TypeError(
      `${FAULT_POINT_VARIABLE}=${value} names no fault point: use trace, or <point>[@<n>] with one of ${FAULT_POINTS.join(", ")}.`,
    );
  }
  return { trace: false, point: point as FaultPoint, hit: Number(hit) };
}
