import { describe, expect, it } from "vitest";
import { clusterTestsWanted } from "@durable/test-utils/redis-cluster";
import { clusterFaultSoak } from "../src/cluster-faults.js";
import { faultTable } from "../src/faults.js";

describe("the cluster fault soak: a master SIGKILLed and slots resharded on the soak's own Redis Cluster while workers take the runs", () => {
  it.skipIf(!clusterTestsWanted())(
    "160 runs, 2 workers, each fault once: every run done, none lost, no call run twice unreported, every StoreUnavailable retried, no operation past the timeout",
    { timeout: 180_000 },
    async () => {
      const { report, rows, violations } = await clusterFaultSoak({
        // Enough runs to outlast the failover on a busy machine (80 were all done before the reshard once, in CI).
        runs: 160,
        workers: 2,
        freezeMs: 0,
        toolMs: 250,
        deadlineSeconds: 150,
        rounds: 1,
        log: (line) => console.log(line),
      });
      console.log(
        [`${report.store}: ${JSON.stringify({ ...report, violations: violations.length })}`, ...faultTable(rows)].join(
          "\n",
        ),
      );
      expect(violations).toEqual([]);
      expect(rows.map((row) => row.fault)).toEqual([
        "SIGKILL a master (its replica takes over)",
        "reshard slots holding runs to another master",
      ]);
    },
  );
});
