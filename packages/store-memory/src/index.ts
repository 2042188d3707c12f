export { MemoryCheckpointStore, type MemoryData, type MemoryRun, type MemoryStoreOptions } from "./memory-store.js";
