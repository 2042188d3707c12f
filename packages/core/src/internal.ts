// `@durable/core/internal`: test and assembly hooks, with no compatibility promise between
// versions: fault points a crash test arms by name, and the memory store's raw rows a test
// reads or changes as an attacker would. An application or a store never needs them.
export {
  faultPoint,
  parseFaultPoint,
  FAULT_POINTS,
  FAULT_POINT_VARIABLE,
  type FaultPoint,
  type ArmedFaultPoint,
} from "./base/fault-points.js";
export type { MemoryData, MemoryRun, MemoryStoreOptions } from "./store/memory-store.js";
