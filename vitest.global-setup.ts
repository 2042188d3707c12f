import type { TestProject } from "vitest/node";
import { assertFreshDependencies } from "./packages/conformance/src/harness/fresh-build.ts";

/**
 * Runs once before a package's tests: they load every other @durable package
 * from its build (`dist/`), so a build older than its source stops the run with
 * one line naming the file and the command that rebuilds it.
 */
export default function refuseStaleBuilds(project: TestProject): void {
  assertFreshDependencies(project.config.root);
}
