import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { assertFreshBuild } from "../src/harness/fresh-build.js";
import { GROUP_NAMES } from "../src/groups.js";

// The built bin, as users run it: these tests refuse to start (StaleBuild) while its build is older than src/.
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
assertFreshBuild(cli);
const memory = fileURLToPath(new URL("./memory.ts", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function run(...args: string[]) {
  return runWith(process.env, ...args);
}

function runWith(env: NodeJS.ProcessEnv, ...args: string[]) {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 120_000, env });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

describe("durable-conformance CLI", () => {
  it("runs the kit against a TypeScript initializer and prints a summary per group", () => {
    const { code, out } = run(memory, "save", "read", "ttl");
    expect(out).toMatch(/PASS {2}save +\d+ passed, 0 failed/);
    expect(out).toMatch(/PASS {2}read +\d+ passed, 0 failed/);
    expect(out).toMatch(/SKIP {2}ttl .*\n.*no `ttl` capability/);
    expect(code).toBe(0);
  }, 120_000);

  it("exits 1 and names the failing tests for a broken store", () => {
    const { code, out } = run(fixture("no-compare-and-set.ts"), "save");
    expect(out).toMatch(/FAIL {2}save/);
    expect(out).toContain("✗ lets exactly one of 8 clients saving the same step at once win");
    expect(code).toBe(1);
  }, 120_000);

  it("prints plain text with no colour codes when stdout is not a terminal, each failure naming its protocol rule", () => {
    const { FORCE_COLOR: _force, NO_COLOR: _no, ...env } = process.env;
    const { code, out } = runWith(env, fixture("no-compare-and-set.ts"), "save");
    expect(code).toBe(1);
    expect(out).not.toContain("\u001b[");
    expect(out).toContain("(docs/protocol.md#the-store-rules)");
  }, 120_000);

  it("says what is wrong with an initializer's shape", () => {
    const { code, out } = run(fixture("bad-shape.ts"), "save");
    expect(out).toContain("`name` must be a non-empty string");
    expect(out).toContain("`createStore` must be a function");
    expect(out).toContain("`capabilities`: unknown option `tll`; did you mean `ttl`?");
    expect(code).toBe(1);
  }, 120_000);

  it("refuses an unknown group or a missing file with exit 2 and one line", () => {
    for (const [args, says] of [
      [[memory, "nope"], "unknown group nope"],
      [["missing.ts"], "no file at"],
      [[], "give the initializer module"],
    ] as const) {
      const { code, out } = run(...args);
      expect(code).toBe(2);
      expect(out.trim().split("\n")).toEqual([expect.stringContaining(says)]);
    }
  });

  it("--help says what it does, each argument and option with its default, the exit codes and an example", () => {
    for (const flag of ["--help", "-h"]) {
      const { code, out } = run(flag);
      expect(code).toBe(0);
      expect(out).toMatch(/^durable-conformance: checks that a CheckpointStore keeps the @durable protocol/);
      expect(out).toContain("Usage: durable-conformance <initializer module> [group…]");
      expect(out).toMatch(/<initializer module> +required/);
      expect(out).toMatch(/\[group…\] +the groups to run; default: every group/);
      for (const group of GROUP_NAMES) expect(out).toMatch(new RegExp(`^ +${group} +\\S`, "m"));
      expect(out).toMatch(/-h, --help +print this help and exit 0; default: off/);
      expect(out).toMatch(/Exit codes: 0 .*, 1 .*, 2 bad usage/);
      expect(out).toMatch(/Example:\n {2}durable-conformance test\/conformance\.ts save read/);
    }
  });

  it("an unknown option exits 2 with one line naming it, and runs nothing", () => {
    const { code, out } = run("--frobnicate", memory);
    expect(code).toBe(2);
    expect(out.trim().split("\n")).toEqual([
      "durable-conformance: unknown option --frobnicate; the only option is --help. See durable-conformance --help.",
    ]);
  });
});
