// `@durable/core/store`: what a store author needs: the protocol, its refusal rules, the errors a store throws.
export {
  isEnded,
  UNFINISHED,
  type CheckpointStore,
  type CheckpointRow,
  type StoredCheckpoint,
  type StoredCall,
  type RunKind,
  type RunStatus,
} from "./checkpoint-store.js";
export { saveRefusal, recordRefusal, type RunHead } from "./protocol.js";
export {
  DurableError,
  CheckpointNotFound,
  CheckpointConflict,
  CheckpointStoreCorrupt,
  InvalidInput,
  StoreUnavailable,
  StoreNotReady,
} from "./errors.js";
