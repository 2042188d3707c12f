#!/usr/bin/env node
/**
 * durable-conformance ./my-store.ts [group…]
 *
 * Runs the conformance kit against the initializer a module exports (default
 * export, or `initializer`), through vitest, and prints a summary per group.
 * Exits 1 when any test fails, 2 on a usage error.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { TestModule } from "vitest/node";
import { GROUP_NAMES } from "./groups.js";

const USAGE = `Usage: durable-conformance <initializer module> [group…]

The module exports a conformance initializer (default export, or "initializer"):
  export default { name, createStore, destroyStore?, beforeAll?, afterAll?, capabilities?, raw? }
TypeScript modules work directly. Groups: ${GROUP_NAMES.join(", ")} (default: all).`;

interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
  skips: Set<string>;
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv.includes("--help") || argv.includes("-h")) {
    console.log(USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  const [modulePath, ...groups] = argv as [string, ...string[]];
  const file = resolve(modulePath);
  if (!existsSync(file)) return usageError(`No file at ${file}.`);
  const unknown = groups.filter((g) => !(GROUP_NAMES as readonly string[]).includes(g));
  if (unknown.length > 0) return usageError(`Unknown group ${unknown.join(", ")}; the groups are ${GROUP_NAMES.join(", ")}.`);

  const dir = mkdtempSync(join(tmpdir(), "durable-conformance-"));
  try {
    writeFileSync(join(dir, "conformance.test.mjs"), entry(file, groups));
    const modules = await runVitest(dir);
    return report(modules);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The test file vitest runs: it loads the initializer, checks its shape and registers the groups. */
function entry(file: string, groups: string[]): string {
  const kit = new URL("./index.js", import.meta.url).href;
  return `import { runConformance, assertInitializer } from ${JSON.stringify(kit)};
const mod = await import(${JSON.stringify(pathToFileURL(file).href)});
const initializer = assertInitializer(mod.default ?? mod.initializer);
runConformance(initializer, ${groups.length > 0 ? `{ groups: ${JSON.stringify(groups)} }` : "{}"});
`;
}

async function runVitest(root: string): Promise<readonly TestModule[]> {
  const { startVitest } = await import("vitest/node");
  let modules: readonly TestModule[] = [];
  const collector = {
    onTestRunEnd(testModules: readonly TestModule[]) {
      modules = testModules;
    },
  };
  const vitest = await startVitest("test", [], {
    root,
    config: false,
    watch: false,
    include: ["conformance.test.mjs"],
    reporters: ["default", collector],
    fileParallelism: false,
  });
  await vitest.close();
  return modules;
}

/** Prints one line per group and every failure; returns the exit code. */
function report(modules: readonly TestModule[]): number {
  const groups = new Map<string, Tally>();
  let loadErrors = 0;
  for (const module of modules) {
    for (const error of module.errors()) {
      loadErrors += 1;
      console.error(`\n${error.message}`);
    }
    for (const test of module.children.allTests()) {
      const group = test.parent.type === "suite" ? test.parent.name : "(top)";
      const tally = groups.get(group) ?? { passed: 0, failed: 0, skipped: 0, failures: [], skips: new Set<string>() };
      groups.set(group, tally);
      const result = test.result();
      if (result.state === "passed") tally.passed += 1;
      else if (result.state === "failed") {
        tally.failed += 1;
        tally.failures.push(`${test.name}: ${result.errors?.[0]?.message ?? "failed"}`);
      } else {
        tally.skipped += 1;
        if (result.state === "skipped" && result.note !== undefined) tally.skips.add(result.note);
      }
    }
  }
  console.log("\nConformance summary");
  let failed = loadErrors;
  let passed = 0;
  for (const [name, t] of groups) {
    const verdict = t.failed > 0 ? "FAIL" : t.passed === 0 ? "SKIP" : "PASS";
    console.log(`  ${verdict}  ${name.padEnd(10)} ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`);
    for (const note of t.skips) console.log(`        ${note}`);
    for (const failure of t.failures) console.log(`        ✗ ${failure.split("\n")[0]}`);
    failed += t.failed;
    passed += t.passed;
  }
  if (groups.size === 0 && loadErrors === 0) console.log("  no tests ran");
  return failed > 0 || passed === 0 ? 1 : 0;
}

function usageError(message: string): number {
  console.error(`${message}\n\n${USAGE}`);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
