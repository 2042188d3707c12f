// The class is @durable/core's own (core's tests run on it); this package gives it under the store's name.
export { MemoryCheckpointStore } from "@durable/core";
