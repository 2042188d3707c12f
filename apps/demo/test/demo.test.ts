import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { type DurableEvent, readJsonlEvents } from "@durable/core";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "durable-demo-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each test starts real worker processes; on a busy machine that takes a while.
const SLOW = 120_000;

function demo(...args: string[]): string {
  return demoIn(undefined, ...args);
}

/** The demo with `TMPDIR` set, so its default store and logs go to that folder. */
function demoIn(tmp: string | undefined, ...args: string[]): string {
  const env = tmp === undefined ? process.env : { ...process.env, TMPDIR: tmp };
  return execFileSync(process.execPath, ["--import", "tsx", main, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
}

/** The events of one demo's run, by type. */
function eventsOf(log: string, runId: string, type: DurableEvent["type"]): DurableEvent[] {
  return readJsonlEvents(log).filter((e) => e.runId === runId && e.type === type);
}

describe("the demo, with real worker processes", () => {
  it(
    "worker 2 serves first; worker 1 dies inside email_tickets; once its lease runs out worker 2 takes the run over, reruns the call when told, and the card is charged once",
    () => {
      const out = demo("--store", `sqlite:${join(dir, "a.db")}`, "--rerun-in-doubt");
      const [, second = ""] = out.match(/^worker 2 \| worker id (\S+), leases of 3 s: serves flow tickets/m) ?? [];
      const [, first = ""] = out.match(/^worker 1 \| worker id (\S+), leases of 3 s: runs 3 order\(s\)/m) ?? [];
      expect(second).not.toBe("");
      expect(first).not.toBe("");
      expect(out.indexOf("worker 2 | worker id")).toBeLessThan(out.indexOf("worker 1 | worker id"));
      const [, runId = ""] =
        out.match(/worker 1 \| (order-3-\w+): inside email_tickets: the worker dies now \(SIGKILL\)/) ?? [];
      expect(runId).not.toBe("");
      expect(out).toContain("(worker 1 exited: SIGKILL)");
      const held = out.match(
        new RegExp(
          `worker 2 \\| ${runId}: held by another worker, (\\S+), until (\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) \\(lease 3 s, not renewed since [\\d:.]+\\): claimable in \\d\\.\\d s`,
        ),
      );
      // Held by worker 1's drive: its worker id and the drive's own suffix.
      expect(held?.[1]?.startsWith(`${first}#`)).toBe(true);
      const expiry = held?.[2] ?? "";
      expect(out).toContain(`worker 2 | ${runId}: its lease ran out at ${expiry}: took it over at `);
      expect(out).toMatch(
        new RegExp(
          `${runId}: its lease ran out at .+, left it waiting for a decision at step 4, as ${second.replace(/[.]/g, "\\.")}\n`,
        ),
      );
      expect(out).toContain(`worker 2 | ${runId}: in doubt: email_tickets (started with no result)`);
      expect(out).toMatch(
        new RegExp(
          `worker 2 \\| ${runId}: claimed it at step 5 as operator@\\d+#[\\w-]+; replayed from the log: none; ran again: email_tickets`,
        ),
      );
      expect(out).toContain(`worker 2 | ${runId}: done, mailed the tickets for Hamlet`);
      // Not "lost: 0": the worker may race the operator's claim of the decided run, and the store refuses it (LeaseHeld).
      expect(out).toContain("recovered 1 run(s); claims lost to another worker: ");
      expect(out).toContain("card log: 3 charge(s) for 3 order(s); charged twice: none");
      expect(out).toContain(`runs taken over: ${runId}; worker 1 died in ${runId}`);

      const log = join(dir, "a.db.events.jsonl");
      const events = readJsonlEvents(log);
      // Only the run worker 1 died in was claimed again, and only after its lease ran out.
      expect(new Set(events.filter((e) => e.type === "run.needs-decision").map((e) => e.runId))).toEqual(
        new Set([runId]),
      );
      const recovered = events.filter((e) => e.type === "run.recovered");
      expect(recovered).toHaveLength(1);
      expect(recovered[0]).toMatchObject({ runId, kind: "flow", step: 5, rerun: [{ tool: "email_tickets" }] });
      const saves = eventsOf(log, runId, "checkpoint.saved");
      const [claim] = eventsOf(log, runId, "run.needs-decision");
      const lastOfWorker1 = saves.filter((e) => e.type === "checkpoint.saved" && e.step === 2)[0];
      expect(Date.parse(claim?.at ?? "")).toBeGreaterThanOrEqual(Date.parse(lastOfWorker1?.at ?? "") + 2_900);
      expect(events.filter((e) => e.type === "run.done")).toHaveLength(3);
    },
    SLOW,
  );

  it(
    "without a decision and with no terminal to ask in, takes the run over, leaves the call in doubt and exits 0; worker 1's live runs are never claimed",
    () => {
      const out = demo("--store", `sqlite:${join(dir, "b.db")}`, "--runs", "30");
      const [, runId = ""] = out.match(/(order-30-\w+): inside email_tickets/) ?? [];
      expect(out).toMatch(new RegExp(`${runId}: held by another worker, .+ until `));
      expect(out).toMatch(
        new RegExp(
          `${runId}: its lease ran out at .+: took it over at .+, left it waiting for a decision at step 4, as `,
        ),
      );
      expect(out).toContain(`${runId}: in doubt: email_tickets (started with no result)`);
      expect(out).toContain("left in doubt: no terminal to ask");
      expect(out).toContain("recovered 0 run(s), 1 taken over and left in doubt; claims lost to another worker: 0");
      expect(out).toContain("card log: 30 charge(s) for 30 order(s); charged twice: none");
      expect(out).toContain(`runs taken over: ${runId}; worker 1 died in ${runId}`);
      const events = readJsonlEvents(join(dir, "b.db.events.jsonl"));
      const claimed = events.filter((e) => e.type === "run.needs-decision" || e.type === "run.recovered");
      expect(claimed.map((e) => e.runId)).toEqual([runId]);
      // Each run started once and every finished run is done once: no step of worker 1's ran twice.
      expect(events.filter((e) => e.type === "checkpoint.saved" && e.step === 0)).toHaveLength(30);
      const done = events.filter((e) => e.type === "run.done").map((e) => e.runId);
      expect(new Set(done).size).toBe(29);
      expect(done).toHaveLength(29);
    },
    SLOW,
  );
});

describe("the default store", () => {
  it(
    "on a fresh machine (an empty temp folder), the demo makes its own folder and runs; run again, it shows its new orders only",
    () => {
      const tmp = mkdtempSync(join(dir, "fresh-tmp-"));
      const first = demoIn(tmp, "--rerun-in-doubt");
      expect(first).toContain(`store: sqlite:${join(tmp, "durable-demo", "runs.db")}`);
      expect(first).toContain("card log: 3 charge(s) for 3 order(s); charged twice: none");
      const again = demoIn(tmp, "--rerun-in-doubt");
      expect(again).toContain("recovered 1 run(s)");
      expect(again).toContain("card log: 3 charge(s) for 3 order(s); charged twice: none");
      const ids = (out: string) => new Set(out.match(/order-\d+-\w+/g));
      expect([...ids(again)].filter((id) => ids(first).has(id))).toEqual([]);
    },
    SLOW,
  );

  it(
    "an earlier demo's run left in doubt is not recovered by the next demo",
    () => {
      const tmp = mkdtempSync(join(dir, "doubt-tmp-"));
      expect(demoIn(tmp, "--runs", "1")).toContain("left in doubt");
      const next = demoIn(tmp, "--runs", "2", "--rerun-in-doubt");
      expect(next).toContain("recovered 1 run(s)");
      expect(next).not.toMatch(/order-1-\w+: in doubt/);
    },
    SLOW,
  );
});

describe("bad input", () => {
  function fails(...args: string[]): { status: number | null; stderr: string } {
    try {
      demo(...args);
      return { status: 0, stderr: "" };
    } catch (error) {
      const { status, stderr } = error as { status: number | null; stderr: string };
      return { status, stderr };
    }
  }

  it.each([
    [
      ["--store", "mysql://localhost/x"],
      /^--store "mysql:\/\/localhost\/x" names no store this knows: use sqlite:<path>, redis:\/\/host:port or postgresql:\/\/.+\.\n$/,
    ],
    [
      ["--store", "redis://127.0.0.1:1"],
      /^--store redis:\/\/127\.0\.0\.1:1 does not answer \(.*ECONNREFUSED.*\): start that server, or pick another store, e\.g\. --store sqlite:.+\.\n$/,
    ],
    [
      ["--store", "postgresql://postgres@127.0.0.1:1/test"],
      /^--store postgresql:\/\/postgres@127\.0\.0\.1:1\/test does not answer \(.+\): start that server, or pick another store, e\.g\. --store sqlite:.+\.\n$/,
    ],
    [["--runs", "0"], /^--runs takes a whole number ≥ 1, not 0\.\n$/],
    [["--bogus"], /^pnpm demo has no option --bogus: it takes --store, --runs, --rerun-in-doubt and --help\.\n$/],
    [["--runs"], /^--runs needs a value: --runs <n> \(see pnpm demo --help\)\.\n$/],
    [
      ["--store", "sqlite:/no/such/folder/x.db"],
      /^--store sqlite:\/no\/such\/folder\/x\.db does not answer \(.*does not exist.*\): give a path in a folder that exists, or pick another store, e\.g\. --store sqlite:.+durable-demo.+\.\n$/,
    ],
  ])(
    "%j: one line on stderr that says what to do, exit 2",
    (args, message) => {
      const { status, stderr } = fails(...args);
      expect(status).toBe(2);
      expect(stderr).toMatch(message);
    },
    SLOW,
  );
});
