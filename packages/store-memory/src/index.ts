export { MemoryCheckpointStore } from "./memory-store.js";
