import type { ValueCodec } from "@durable/core";
import type { JsonObject } from "@durable/core/runner";
import { InvalidInput } from "@durable/core";
import { flowDataJson, readFlowData } from "./flow-data.js";
import type { Flow } from "./flow.js";
import { checkStoredState, settleState, storedState } from "./schema.js";

/**
 * The state a run goes on with on other code: `state` gives a new one, or a
 * function of the run's own (decoded, checked); none keeps the run's own.
 */
export interface NewState<S = unknown> {
  readonly state?: S | ((state: S) => S | Promise<S>) | undefined;
}

/**
 * A run's stored flow data moved onto `flow`'s code, as a migration or a fork
 * writes it: the nodes it goes on with and the joins it waits on must be
 * nodes of `flow` (`InvalidInput` otherwise, nothing written), its state is
 * the one given, settled by `flow`'s schema, or its own, which must still
 * parse to itself, and its graph digest becomes `flow`'s, so that code goes on
 * with it.
 */
export async function retargeted<S>(
  flow: Flow<S>,
  codec: ValueCodec,
  runId: string,
  stored: JsonObject,
  given: NewState<S>,
): Promise<JsonObject> {
  const data = readFlowData(runId, stored);
  const { nodes } = flow.graph;
  const unknown = [...data.frontier, ...Object.keys(data.waiting)].find((node) => !nodes.has(node));
  if (unknown !== undefined)
    throw new InvalidInput(
      `Run ${JSON.stringify(runId)} goes on with node ${JSON.stringify(unknown)}, which flow ${JSON.stringify(flow.name)} does not have: keep that node in the code it moves to.`,
    );
  const what = `The state of run ${runId} on flow ${flow.name}`;
  const own = await checkStoredState(flow.schema, codec, data.state, what);
  const next =
    typeof given.state === "function" ? await (given.state as (state: S) => S | Promise<S>)(own) : given.state;
  const state = next === undefined ? own : await settleState(flow.schema, codec, next, what);
  return flowDataJson({ ...data, state, digest: flow.digest }, storedState(codec, state));
}
