import { callLogGroup } from "./cases/call-log.js";
import type { ConformanceGroup, GroupName } from "./cases/case.js";
import { integrityGroup } from "./cases/integrity.js";
import { isolationGroup } from "./cases/isolation.js";
import { readGroup } from "./cases/read.js";
import { saveGroup } from "./cases/save.js";
import { scaleGroup } from "./cases/scale.js";
import { ttlGroup } from "./cases/ttl.js";

/** Every group of the kit, in the order they run. */
export const GROUPS: readonly ConformanceGroup[] = [
  saveGroup,
  readGroup,
  callLogGroup,
  integrityGroup,
  isolationGroup,
  ttlGroup,
  scaleGroup,
];

/** The names of every group. */
export const GROUP_NAMES: readonly GroupName[] = GROUPS.map((group) => group.name);

/** The group of that name; a `TypeError` listing the names for any other. */
export function groupNamed(name: string): ConformanceGroup {
  const group = GROUPS.find((g) => g.name === name);
  if (group === undefined) throw new TypeError(`No conformance group ${JSON.stringify(name)}; the groups are ${GROUP_NAMES.join(", ")}.`);
  return group;
}
