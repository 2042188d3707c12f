import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ListedRun, RunDetail } from "@durable/console";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The demo as its package names it: a real run of it fills the store the viewer reads.
const demo = fileURLToPath(import.meta.resolve("@durable-apps/demo/main"));
const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "durable-viewer-"));
const storeUrl = `sqlite:${join(dir, "runs.db")}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The viewer as a real process on a free port, until `stop`. */
async function viewerProcess(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ["--import", "tsx", main, "--port", "0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      // The token from the browser's address; requests go to the address for programs.
      const found = /viewer: (http:\/\/\S+) {2}\(programs: (http:\/\/[^;]+);/.exec(stdout);
      if (found?.[1] !== undefined && found[2] !== undefined)
        resolve(`${found[2]}/?token=${new URL(found[1]).searchParams.get("token")}`);
    });
    child.once("exit", (code) => reject(new Error(`the viewer exited (${code}): ${stderr}`)));
  });
  const token = new URL(url).searchParams.get("token") ?? "";
  const get = async <T>(path: string): Promise<T> =>
    (await (await fetch(new URL(path, url), { headers: { authorization: `Bearer ${token}` } })).json()) as T;
  const page = async (path: string) =>
    (await fetch(new URL(path, url), { headers: { authorization: `Bearer ${token}` } })).text();
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return { get, page, stop };
}

const withoutKey = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env["DURABLE_KEY"];
  return env;
};

describe("the viewer: the console with the demo's defaults", () => {
  beforeAll(() => {
    // The demo's crash and recovery: worker 1 dies inside email_tickets, worker 2 reruns it.
    const out = execFileSync(process.execPath, ["--import", "tsx", demo, "--store", storeUrl, "--rerun-in-doubt"], {
      encoding: "utf8",
      env: withoutKey(),
    });
    expect(out).toContain("recovered 1 run(s)");
  }, 180_000);

  it("lists the demo's runs and shows the recovered order's email rerun, with its events", async () => {
    const viewer = await viewerProcess(["--demo", "--store", storeUrl], withoutKey());
    try {
      const { runs } = await viewer.get<{ runs: ListedRun[] }>("/api/runs");
      expect(runs).toHaveLength(3);
      // A run's page counts its recoveries (the list reads only each run's latest checkpoint, which cannot tell).
      const details = await Promise.all(
        runs.map((listed) => viewer.get<RunDetail>(`/api/runs/${encodeURIComponent(listed.runId)}`)),
      );
      const recovered = details.filter((detail) => detail.recoveries > 0);
      expect(recovered.map((detail) => detail.status)).toEqual(["done"]);
      const run = recovered[0] as RunDetail;
      expect(run.calls.map((c) => [c.tool, c.marks])).toEqual([
        ["hold_seats", ["ran"]],
        ["charge_card", ["ran"]],
        ["email_tickets", ["ran", "rerun"]],
      ]);
      expect(run.events.map((e) => e.type)).toContain("run.recovered");
    } finally {
      await viewer.stop();
    }
  }, 60_000);

  it('with another key than the workers\', every run is unreadable and the list asks "wrong key?"', async () => {
    const env = { ...withoutKey(), DURABLE_KEY: "another-key-0123456789abcdef-0123456789" };
    const viewer = await viewerProcess(["--store", storeUrl], env);
    try {
      const html = await viewer.page("/");
      expect(html.match(/wrong key\?/g)).toHaveLength(1);
    } finally {
      await viewer.stop();
    }
  }, 60_000);
});
