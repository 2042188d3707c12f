import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { clusterFaultSoak } from "../src/cluster-faults.js";
import { faultTable } from "../src/faults.js";

/** Whether redis-server and redis-cli are installed; CI needs them, locally the test is skipped. */
function redisInstalled(): boolean {
  try {
    execFileSync("sh", ["-c", "command -v redis-server && command -v redis-cli"], { stdio: "ignore" });
    return true;
  } catch {
    if (process.env["CI"] === "true") throw new Error("redis-server or redis-cli is missing; CI needs both.");
    console.warn("Skipping the cluster fault soak: install redis-server and redis-cli.");
    return false;
  }
}

describe("the cluster fault soak: a master SIGKILLed and slots resharded on the soak's own Redis Cluster while workers take the runs", () => {
  it.skipIf(!redisInstalled())(
    "80 runs, 2 workers, each fault once: every run done, none lost, no call run twice unreported, every StoreUnavailable retried, no operation past the timeout",
    { timeout: 180_000 },
    async () => {
      const { report, rows, violations } = await clusterFaultSoak({
        runs: 80,
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
