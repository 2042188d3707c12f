import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cancelRun, CheckpointConflict } from "@durable/core";
import { until } from "@durable/test-utils/waiting";
import { describe, expect, it } from "vitest";
import { sqliteFiles } from "./sqlite-files.js";
import { effects, flow, KEY, runner, tools } from "./drive-loses-run.js";

// A drive that lost its run (a cancel, another worker's takeover) learns it at once in its own process, and
// by its lease keeper's next renewal from another: its running tool's ctx.signal is aborted, and it records
// nothing more. Judged by the tools' effects file: what the tools really did.

const CHILD = fileURLToPath(new URL("./drive-loses-run-child.ts", import.meta.url));
/** The tool's abort line: its reason names the run and says the drive lost it. */
const ABORTED = /^hold (worker|child) aborted: CheckpointConflict: Run "r": this drive lost the run/;

const { files, open } = sqliteFiles("durable-drive-loses-run-");

/** Starts the child's drive of run "r"; resolves with what it printed once it exits (killed after 10 s). */
function childDrive(db: string, path: string): Promise<string[]> {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, path], {
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 10_000,
    killSignal: "SIGKILL",
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => child.on("exit", () => resolve(out.split("\n").filter(Boolean))));
}

describe("a drive that loses its run, in the same process (two store objects on one SQLite file)", () => {
  for (const how of ["FlowRunner.cancel", "cancelRun on an admin's store object"] as const) {
    it(`a cancel aborts the running tool's signal: the run ends cancelled, the next tool never runs (${how})`, {
      timeout: 15_000,
    }, async () => {
      const { db, effects: path } = files();
      const worker = runner(open(db), tools(path, "worker", true));
      const driving = worker.run(flow, {}, { runId: "r" }).catch((error: unknown) => error);
      await until(() => effects(path).includes("hold worker"));
      const admin = open(db);
      const step = await (how === "FlowRunner.cancel"
        ? worker.cancel(flow, "r", "customer left")
        : cancelRun("r", "customer left", { checkpoints: admin, checkpointKey: KEY, by: "ops" }));
      const outcome = await driving;
      expect(effects(path)).toEqual(["hold worker", expect.stringMatching(ABORTED)]);
      expect(effects(path)[1]).toContain("it was cancelled (customer left)");
      expect(outcome).toBeInstanceOf(CheckpointConflict);
      // The cancel's failed step is the run's last: the drive recorded nothing after it.
      expect(await admin.latest("r")).toMatchObject({ status: "failed", step });
    });
  }

  it("a takeover by another worker aborts the running tool's signal: the charge is made once, by the new owner", {
    timeout: 15_000,
  }, async () => {
    const { db, effects: path } = files();
    const driving = runner(open(db), tools(path, "worker", true), 600)
      .run(flow, {}, { runId: "r" })
      .catch((error: unknown) => error);
    await until(() => effects(path).includes("hold worker"));
    const result = await runner(open(db), tools(path, "other", false)).recover(flow, "r", { takeOver: true });
    // The old drive learns it by its keeper's next renewal, a third of its 600 ms lease after its claim.
    const outcome = await driving;
    expect(result).toMatchObject({ status: "done" });
    expect(effects(path).filter((line) => line.startsWith("charge"))).toEqual(["charge other"]);
    expect(effects(path).filter((line) => ABORTED.test(line))).toHaveLength(1);
    expect(outcome).toBeInstanceOf(CheckpointConflict);
  });
});

describe("a drive that loses its run to another process", () => {
  it("a cancel aborts the running tool's signal by the drive's next renewal: the run ends cancelled, the next tool never runs", {
    timeout: 20_000,
  }, async () => {
    const { db, effects: path } = files();
    const child = childDrive(db, path);
    await until(() => effects(path).includes("hold child"));
    const admin = open(db);
    const step = await cancelRun("r", "customer left", { checkpoints: admin, checkpointKey: KEY, by: "ops" });
    const printed = await child;
    expect(effects(path)).toEqual(["hold child", expect.stringMatching(ABORTED)]);
    expect(printed).toEqual(["outcome CheckpointConflict"]);
    expect(await admin.latest("r")).toMatchObject({ status: "failed", step });
  });

  it("a takeover aborts the running tool's signal by the drive's next renewal: the charge is made once, by the new owner", {
    timeout: 20_000,
  }, async () => {
    const { db, effects: path } = files();
    const child = childDrive(db, path);
    await until(() => effects(path).includes("hold child"));
    const result = await runner(open(db), tools(path, "parent", false)).recover(flow, "r", { takeOver: true });
    const printed = await child;
    expect(result).toMatchObject({ status: "done" });
    expect(effects(path).filter((line) => line.startsWith("charge"))).toEqual(["charge parent"]);
    expect(effects(path).filter((line) => ABORTED.test(line))).toHaveLength(1);
    expect(printed).toEqual(["outcome CheckpointConflict"]);
  });
});
