import { batchGroup } from "./cases/batch.js";
import { callLogGroup } from "./cases/call-log.js";
import { crashGroup } from "./cases/crash.js";
import type { ConformanceGroup, GroupName } from "./cases/case.js";
import { inspectGroup } from "./cases/inspect.js";
import { integrityGroup } from "./cases/integrity.js";
import { isolationGroup } from "./cases/isolation.js";
import { leaseGroup } from "./cases/lease.js";
import { raceGroup } from "./cases/race.js";
import { readGroup } from "./cases/read.js";
import { saveGroup } from "./cases/save.js";
import { scaleGroup } from "./cases/scale.js";
import { tamperGroup } from "./cases/tamper.js";
import { anchorGroup } from "./cases/anchor.js";
import { ttlGroup } from "./cases/ttl.js";
import { timersGroup } from "./cases/timers.js";
import { eventsGroup } from "./cases/events.js";
import { forkGroup } from "./cases/fork.js";
import { queueGroup } from "./cases/queue.js";
import { streamGroup } from "./cases/stream.js";

/** Every group of the kit, in the order they run. */
export const GROUPS: readonly ConformanceGroup[] = [
  saveGroup,
  readGroup,
  callLogGroup,
  batchGroup,
  leaseGroup,
  timersGroup,
  eventsGroup,
  streamGroup,
  queueGroup,
  inspectGroup,
  forkGroup,
  integrityGroup,
  tamperGroup,
  anchorGroup,
  isolationGroup,
  ttlGroup,
  scaleGroup,
  raceGroup,
  crashGroup,
];

/** The names of every group. */
export const GROUP_NAMES: readonly GroupName[] = GROUPS.map((group) => group.name);

/** The group of that name; a `TypeError` listing the names for any other. */
export function groupNamed(name: string): ConformanceGroup {
  const group = GROUPS.find((g) => g.name === name);
  if (group === undefined)
    throw new TypeError(`No conformance group ${JSON.stringify(name)}; the groups are ${GROUP_NAMES.join(", ")}.`);
  return group;
}
