import { CheckpointStoreCorrupt, type JsonObject, type JsonValue } from "@durable/core";
import type { BoundDecision } from "@durable/core/runner";

/** A call waiting on an approval, as a paused result lists it. */
export interface Approval {
  readonly callId: string;
  readonly tool: string;
  readonly args: JsonValue;
}

/** What a flow seals into each checkpoint, besides what core seals. */
export interface FlowData {
  readonly state: JsonObject;
  /** The nodes of the next superstep. */
  readonly frontier: readonly string[];
  /** How often each node ran. */
  readonly visits: Readonly<Record<string, number>>;
  /** For each join target, the nodes that arrived since it last ran. */
  readonly waiting: Readonly<Record<string, readonly string[]>>;
  readonly digest: string;
  /** The number of the next superstep; its calls are logged under this round. */
  readonly round: number;
  /** Calls waiting on approvals (paused checkpoints). */
  readonly pending: readonly Approval[];
  /** Decisions stored by a resume, spent by the next superstep. */
  readonly decisions: readonly BoundDecision[];
  /** Why the run failed (failed checkpoints). */
  readonly error?: string;
}

/** Reads a flow's data out of a verified checkpoint. */
export function readFlowData(runId: string, data: JsonValue): FlowData {
  const d = data as Partial<Record<keyof FlowData, unknown>> | null;
  const ok =
    typeof d === "object" &&
    d !== null &&
    typeof d.state === "object" &&
    Array.isArray(d.frontier) &&
    typeof d.visits === "object" &&
    typeof d.waiting === "object" &&
    typeof d.digest === "string" &&
    Number.isSafeInteger(d.round) &&
    Array.isArray(d.pending) &&
    Array.isArray(d.decisions);
  if (!ok) throw new CheckpointStoreCorrupt(runId, "the checkpoint holds no flow data.");
  return d as unknown as FlowData;
}

/** The data as sealed: plain JSON. */
export function toJson(data: FlowData): JsonValue {
  return data as unknown as JsonValue;
}
