import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const memory = fileURLToPath(new URL("../../store-memory/test/conformance.ts", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 120_000 });
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

  it("says what is wrong with an initializer's shape", () => {
    const { code, out } = run(fixture("bad-shape.ts"), "save");
    expect(out).toContain("`name` must be a non-empty string");
    expect(out).toContain("`createStore` must be a function");
    expect(out).toContain("`capabilities.tll` is not a capability the kit knows");
    expect(code).toBe(1);
  }, 120_000);

  it("refuses an unknown group or a missing file with usage help", () => {
    expect(run(memory, "nope")).toMatchObject({ code: 2, out: expect.stringContaining("Unknown group nope") });
    expect(run("missing.ts")).toMatchObject({ code: 2, out: expect.stringContaining("No file at") });
  });
});
