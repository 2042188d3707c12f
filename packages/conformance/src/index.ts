export { runConformance, runConformanceGroup, type ConformanceOptions } from "./register.js";
export { GROUPS, GROUP_NAMES, groupNamed } from "./groups.js";
export {
  assertInitializer,
  initializerProblems,
  type Capabilities,
  type MultiProcess,
  type AnchorCapability,
  type ConformanceInitializer,
  type RawAccess,
  type RowRef,
  type RowColumn,
} from "./harness/initializer.js";
export { assertFreshBuild, assertFreshDependencies, StaleBuild } from "./harness/fresh-build.js";
export { Harness, KIT_KEY, type RowOptions } from "./harness/harness.js";
export { failingCases } from "./failing-cases.js";
export type { ConformanceCase, ConformanceGroup, GroupName } from "./cases/case.js";
export { saveGroup } from "./cases/save.js";
export { readGroup } from "./cases/read.js";
export { callLogGroup } from "./cases/call-log.js";
export { leaseGroup } from "./cases/lease.js";
export { integrityGroup } from "./cases/integrity.js";
export { isolationGroup } from "./cases/isolation.js";
export { ttlGroup } from "./cases/ttl.js";
export { scaleGroup } from "./cases/scale.js";
export { tamperGroup } from "./cases/tamper.js";
export { raceGroup } from "./cases/race.js";
export { crashGroup } from "./cases/crash.js";
export { anchorGroup } from "./cases/anchor.js";
export { forkGroup } from "./cases/fork.js";
export { anchorInFiles } from "./process/anchors.js";
