import { CheckpointStoreCorrupt, type JsonValue } from "@durable/core";
import { isArrayOf, isCount, isRecordOf, isString, type JsonObject } from "@durable/core/runner";

/** What a flow seals into each checkpoint as its own data (the driver's envelope holds the round, pending approvals and their answers). */
export interface FlowData<S = JsonObject> {
  readonly state: S;
  /** The nodes of the next superstep. */
  readonly frontier: readonly string[];
  /** How often each node ran. */
  readonly visits: Readonly<Record<string, number>>;
  /** For each join target, the nodes that arrived since it last ran. */
  readonly waiting: Readonly<Record<string, readonly string[]>>;
  readonly digest: string;
}

/** Reads a flow's data out of a verified checkpoint, checking every field (the state is checked by the flow's schema). */
export function readFlowData(runId: string, data: JsonObject): FlowData<JsonValue> {
  const { state, frontier, visits, waiting, digest } = data;
  const ok =
    state !== undefined &&
    isArrayOf(frontier, isString) &&
    isRecordOf(visits, isCount) &&
    isRecordOf(waiting, (names): names is string[] => isArrayOf(names, isString)) &&
    isString(digest);
  if (!ok) throw new CheckpointStoreCorrupt(runId, "the checkpoint holds no flow data.");
  return { state, frontier, visits, waiting, digest };
}

/** A flow's data as sealed, with its state in its stored form. */
export function flowDataJson<S>(data: FlowData<S>, state: JsonValue): JsonObject {
  return {
    state,
    frontier: [...data.frontier],
    visits: { ...data.visits },
    waiting: Object.fromEntries(Object.entries(data.waiting).map(([target, arrived]) => [target, [...arrived]])),
    digest: data.digest,
  };
}
