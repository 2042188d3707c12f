// The class is @durable/core's own (core's tests run on it); this package gives it under the store's name.
export { MemoryCheckpointStore, type MemoryData, type MemoryRun, type MemoryStoreOptions } from "@durable/core";
