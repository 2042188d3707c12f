import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { faultSoak, faultTable } from "../src/faults.js";

/** Whether redis-server and PostgreSQL's initdb are installed; CI needs them, locally the test is skipped. */
function serversInstalled(): boolean {
  try {
    execFileSync("sh", ["-c", "command -v redis-server && ls /usr/lib/postgresql/*/bin/initdb"], { stdio: "ignore" });
    return true;
  } catch {
    if (process.env["CI"] === "true")
      throw new Error("redis-server or /usr/lib/postgresql/*/bin/initdb is missing; CI needs both for the fault soak.");
    console.warn("Skipping the fault soak: install redis-server and PostgreSQL (initdb, pg_ctl).");
    return false;
  }
}

describe("the fault soak: the soak's own Redis and PostgreSQL restarted, frozen and cut while workers take the runs", () => {
  it.skipIf(!serversInstalled())(
    "80 runs, 2 workers, each fault once, 2 s freezes: every run done, none lost, no call run twice unreported, every StoreUnavailable retried, no operation past the timeout",
    { timeout: 180_000 },
    async () => {
      const results = await faultSoak({
        runs: 80,
        workers: 2,
        freezeMs: 2_000,
        toolMs: 250,
        deadlineSeconds: 150,
        rounds: 1,
      });
      for (const { report, rows, violations } of results) {
        console.log(
          [
            `${report.store}: ${JSON.stringify({ ...report, violations: violations.length })}`,
            ...faultTable(rows),
          ].join("\n"),
        );
        expect(violations).toEqual([]);
      }
      const faults = results.flatMap(({ rows }) => rows.map((row) => row.fault));
      expect(faults).toEqual([
        "cut every connection (proxy)",
        "restart Redis (SIGTERM, AOF always)",
        "freeze Redis 2 s (SIGSTOP/SIGCONT)",
        "cut every connection (proxy)",
        "restart PostgreSQL (pg_ctl stop -m fast)",
        "restart PostgreSQL (pg_ctl stop -m immediate)",
        "freeze PostgreSQL 2 s (SIGSTOP/SIGCONT)",
      ]);
    },
  );
});
