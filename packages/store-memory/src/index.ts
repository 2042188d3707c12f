// The memory store lives in @durable/core, whose own tests run on it; this package is its home for users.
export { MemoryCheckpointStore, type MemoryData, type MemoryRun, type MemoryStoreOptions } from "@durable/core";
