#!/usr/bin/env node
/**
 * durable-conformance ./my-store.ts [group…]
 *
 * Runs the conformance kit against the initializer a module exports (default
 * export, or `initializer`), through vitest, and prints a summary per group.
 * Exits 1 when any test fails, 2 on a usage error (one line). Plain text, no
 * colours, when stdout is not a terminal (FORCE_COLOR=1 keeps them). `--help` says more.
 */
import "./plain-output.js";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { TestModule } from "vitest/node";
import { GROUP_NAMES, GROUPS } from "./groups.js";

const BIN = "durable-conformance";

/** The --help text: what the command does, its arguments and options with their defaults, exit codes, one example. */
function help(): string {
  const width = Math.max(...GROUPS.map((g) => g.name.length));
  const groups = GROUPS.map((g) => `      ${g.name.padEnd(width)}  ${g.proves}`).join("\n");
  return `${BIN}: checks that a CheckpointStore keeps the @durable protocol. It runs the
conformance kit's groups against the store a module's initializer makes (through
vitest, one group after another) and prints one line per group.

Usage: ${BIN} <initializer module> [group…]

Arguments:
  <initializer module>  required; a .js or .ts file (TypeScript works directly) whose
                        default export, or export "initializer", is
                        { name, createStore, destroyStore?, beforeAll?, afterAll?, capabilities?, raw? }
  [group…]              the groups to run; default: every group, in this order:
${groups}

Options:
  -h, --help            print this help and exit 0; default: off

Output: plain text when stdout is not a terminal; FORCE_COLOR=1 keeps the colours.

Exit codes: 0 every test that ran passed, 1 a test failed or none ran, 2 bad usage.

Example:
  ${BIN} test/conformance.ts save read`;
}

interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
  skips: Set<string>;
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(help());
    return 0;
  }
  const option = argv.find((arg) => arg.startsWith("-"));
  if (option !== undefined) return usageError(`unknown option ${option}; the only option is --help.`);
  if (argv.length === 0) return usageError(`give the initializer module to check, e.g. ${BIN} test/conformance.ts.`);
  const [modulePath, ...groups] = argv as [string, ...string[]];
  const file = resolve(modulePath);
  if (!existsSync(file)) return usageError(`no file at ${file}.`);
  const unknown = groups.filter((g) => !(GROUP_NAMES as readonly string[]).includes(g));
  if (unknown.length > 0)
    return usageError(`unknown group ${unknown.join(", ")}; the groups are ${GROUP_NAMES.join(", ")}.`);

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

/** Prints a usage error on one line; returns exit code 2. */
function usageError(message: string): number {
  console.error(`${BIN}: ${message} See ${BIN} --help.`);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
