import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { readJsonlEvents } from "@durable/core";

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

describe("the demo, with real worker processes", () => {
  it(
    "worker 1 dies inside email_tickets; worker 2 finds it in doubt, reruns it when told, and the card is charged once",
    () => {
      const out = demo("--store", `sqlite:${join(dir, "a.db")}`, "--rerun-in-doubt");
      expect(out).toMatch(/worker 1 \| order-3-\w+: inside email_tickets: the worker dies now \(SIGKILL\)/);
      expect(out).toContain("(worker 1 exited: SIGKILL)");
      expect(out).toMatch(/worker 2 \| order-3-\w+: in doubt: email_tickets \(started with no result\)/);
      expect(out).toMatch(/worker 2 \| order-3-\w+: done, mailed the tickets for Hamlet/);
      expect(out).toMatch(/ran again: email_tickets/);
      expect(out).toContain("recovered 1 run(s)");
      expect(out).toContain("card log: 3 charge(s) for 3 order(s); charged twice: none");
      const events = readJsonlEvents(join(dir, "a.db.events.jsonl"));
      const recovered = events.filter((e) => e.type === "run.recovered");
      expect(recovered).toHaveLength(1);
      expect(recovered[0]).toMatchObject({ kind: "flow", rerun: [{ tool: "email_tickets" }] });
      expect(events.filter((e) => e.type === "run.done")).toHaveLength(3);
    },
    SLOW,
  );

  it(
    "without a decision and with no terminal to ask in, leaves the call in doubt",
    () => {
      const out = demo("--store", `sqlite:${join(dir, "b.db")}`, "--runs", "1");
      expect(out).toMatch(/in doubt: email_tickets/);
      expect(out).toContain("left in doubt: no terminal to ask");
      expect(out).toContain("card log: 1 charge(s) for 1 order(s)");
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
