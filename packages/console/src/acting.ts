import type { CheckpointKeys, CheckpointStore, EncryptionKeys } from "@durable/core";
import type { StateSchemas } from "./fork-state.js";

/** Where the console records actions, and as whom. */
export interface Acting {
  readonly store: CheckpointStore;
  readonly keys: CheckpointKeys;
  readonly encryptionKey: EncryptionKeys | undefined;
  /** Who acts: recorded with every action. */
  readonly by: string;
  /** The flows' state schemas, by flow name: they check a state edited for a fork. */
  readonly schemas: StateSchemas;
}

/** What an action recorded, as the operator is told it, and the run whose page tells it (a fork's is the new run's). */
export interface ActionOutcome {
  readonly text: string;
  readonly runId: string;
}
